"""A TCP relay that can slow a link: the nemesis's latency, in user space.

    python bench/nemesis_relay.py --listen 10.200.1.6:5999 --target 10.200.1.6:5432

Why in user space: ``tc netem`` is not in every kernel this runs on (nor ``iptables``),
and a delay inside outlast would test nothing. Worker ``w1`` reaches Postgres only
through this relay (its database URL names the relay), which runs on the host at the
link's host address: w1's packets still cross the router namespace, so the partition's
blackhole routes cut them as before.

Each accepted connection gets its own connection to ``--target``, made from the same
address (``--source``, by default the listening one), so Postgres sees w1's sessions
come from an address of their own (the probe looks for them in ``pg_stat_activity``).
Normally a chunk read on one side is written to the other at once. After SIGUSR1, every
chunk read is held ``--low`` to ``--high`` milliseconds (uniform) before it is written,
in each direction, never overtaking the chunk before it; SIGUSR2 ends the delay (chunks
already held keep their time). An end of stream or an error on one side closes the
other, in order after what was read before it, as a network carries a FIN.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import signal
import sys
import time

CHUNK = 65536


class Relay:
    def __init__(self, target: tuple[str, int], source: str, low: float, high: float) -> None:
        self.target, self.source = target, source
        self.low, self.high = low, high
        self.slow = False
        self.held = 0  # chunks delayed: what says the fault slowed something
        self.rng = random.Random()

    def delay(self) -> float:
        if not self.slow:
            return 0.0
        self.held += 1
        return self.rng.uniform(self.low, self.high)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(
                *self.target, local_addr=(self.source, 0)
            )
        except OSError:
            writer.close()
            return
        await asyncio.gather(
            self.pipe(reader, up_writer), self.pipe(up_reader, writer), return_exceptions=True
        )

    async def pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One direction: a reader that stamps each chunk with when it may go, and a
        writer that sends them in order at that time. ``b""`` is the end of stream."""
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue(maxsize=256)

        async def read() -> None:
            last = 0.0
            while True:
                try:
                    chunk = await reader.read(CHUNK)
                except OSError:
                    chunk = b""
                # never before the chunk ahead of it: the stream's order is TCP's
                last = max(time.monotonic() + self.delay(), last)
                await queue.put((last, chunk))
                if not chunk:
                    return

        async def write() -> None:
            try:
                while True:
                    due, chunk = await queue.get()
                    await asyncio.sleep(max(0.0, due - time.monotonic()))
                    if not chunk:
                        return
                    writer.write(chunk)
                    await writer.drain()
            except OSError:
                pass
            finally:
                writer.close()
                reading.cancel()  # the other end is gone: stop reading for it

        reading = asyncio.create_task(read())
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(reading, write())


async def main(opts: argparse.Namespace) -> None:
    host, port = opts.listen.rsplit(":", 1)
    target_host, target_port = opts.target.rsplit(":", 1)
    relay = Relay((target_host, int(target_port)), opts.source or host, opts.low, opts.high)
    loop = asyncio.get_running_loop()

    def switch(slow: bool) -> None:
        relay.slow = slow
        print("slow" if slow else f"fast: {relay.held} chunks held", flush=True)
        relay.held = 0

    loop.add_signal_handler(signal.SIGUSR1, switch, True)
    loop.add_signal_handler(signal.SIGUSR2, switch, False)
    server = await asyncio.start_server(relay.serve, host, int(port), reuse_address=True)
    print(f"relay listening on {opts.listen} for {opts.target}", flush=True)
    async with server:
        await server.serve_forever()


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--listen", required=True, help="host:port")
    p.add_argument("--target", required=True, help="host:port")
    p.add_argument("--source", help="the address to connect from (default: --listen's)")
    p.add_argument("--low", type=float, default=100, help="ms, the shortest delay")
    p.add_argument("--high", type=float, default=300, help="ms, the longest delay")
    opts = p.parse_args(argv)
    opts.low, opts.high = opts.low / 1000, opts.high / 1000
    return opts


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main(parse(sys.argv[1:])))
