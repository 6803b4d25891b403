// Builds one test page (page/, the legacy useStream; page-v2/, the protocol-v2 useStream;
// chosen by OUTLAST_PAGE, default page) into <page>/dist with relative asset paths, so any
// static file server can serve it from its root.
import { fileURLToPath } from "node:url";
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

const page = process.env.OUTLAST_PAGE ?? "page";

export default defineConfig({
  root: fileURLToPath(new URL(`./${page}`, import.meta.url)),
  base: "./",
  plugins: [react()],
  logLevel: "warn",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    sourcemap: false,
    // A test page: readable errors beat small bundles.
    minify: false,
  },
});
