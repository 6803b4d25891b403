// A form built from a wait's JSON schema: what a person fills in to answer it.
// Covers what waits ask for (strings, numbers, booleans, enums, objects of those); anything
// else is a JSON text area, so every schema can still be answered.
"use strict";

const SchemaForm = (() => {
  function el(tag, attrs = {}, children = []) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (v !== undefined && v !== null) node.setAttribute(k, v);
    }
    for (const child of children) node.append(child);
    return node;
  }

  function labelled(text, control, required) {
    return el("label", {}, [text + (required ? " *" : ""), control]);
  }

  function field(schema, name, required) {
    schema = schema || {};
    const title = schema.title || name || "answer";
    if (Array.isArray(schema.enum)) {
      const select = el("select", { name });
      if (!required) select.append(el("option", { value: "" }, ["—"]));
      schema.enum.forEach((v, i) => select.append(el("option", { value: String(i) }, [JSON.stringify(v)])));
      return {
        node: labelled(title, select, required),
        read: () => (select.value === "" ? undefined : schema.enum[Number(select.value)]),
      };
    }
    const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== "null") : schema.type;
    if (type === "string") {
      const long = !schema.maxLength || schema.maxLength > 200;
      const input = long ? el("textarea", { name, rows: 2 }) : el("input", { name, type: "text" });
      if (schema.maxLength) input.setAttribute("maxlength", schema.maxLength);
      if (schema.description) input.setAttribute("placeholder", schema.description);
      return {
        node: labelled(title, input, required),
        read: () => (input.value === "" && !required ? undefined : input.value),
      };
    }
    if (type === "number" || type === "integer") {
      const input = el("input", { name, type: "number", step: type === "integer" ? "1" : "any" });
      const min = schema.minimum ?? schema.exclusiveMinimum;
      if (min !== undefined) input.setAttribute("min", min);
      if (schema.maximum !== undefined) input.setAttribute("max", schema.maximum);
      return {
        node: labelled(title, input, required),
        read: () => (input.value === "" ? undefined : Number(input.value)),
      };
    }
    if (type === "boolean") {
      const input = el("input", { name, type: "checkbox" });
      return { node: el("label", {}, [input, " " + title]), read: () => input.checked };
    }
    if (type === "object" && schema.properties) {
      const needed = new Set(schema.required || []);
      const parts = Object.entries(schema.properties).map(([key, sub]) => [key, field(sub, key, needed.has(key))]);
      const box = el("fieldset", {}, [el("legend", {}, [schema.description || title])]);
      parts.forEach(([, part]) => box.append(part.node));
      return {
        node: box,
        read: () => {
          const out = {};
          for (const [key, part] of parts) {
            const value = part.read();
            if (value !== undefined) out[key] = value;
          }
          return out;
        },
      };
    }
    // Anything else: JSON (or plain text, sent as a string).
    const area = el("textarea", { name, rows: 3, placeholder: "JSON, or plain text" });
    return {
      node: labelled(title + " (JSON)", area, required),
      read: () => {
        try {
          return JSON.parse(area.value);
        } catch (_) {
          return area.value;
        }
      },
    };
  }

  // The schema a wait of each kind is answered with, when the wait does not carry one.
  const DEFAULTS = {
    reconciliation: {
      type: "object",
      description: "did the unfinished call happen?",
      properties: { happened: { type: "boolean", title: "it happened" }, result: {} },
      required: ["happened"],
    },
  };

  // A credential: typed into a password field, never shown, never autocompleted.
  function secret(wait) {
    const input = el("input", { name: "answer", type: "password", autocomplete: "off" });
    const what = (wait.object && (wait.object.credential || wait.object.scope)) || "the credential";
    return { node: labelled(`${what}`, input, true), read: () => input.value };
  }

  function build(wait) {
    if (wait.kind === "auth") return secret(wait);
    const schema = wait.schema || DEFAULTS[wait.kind] || null;
    return field(schema, "answer", true);
  }

  return { build };
})();
