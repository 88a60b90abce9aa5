"""`bertviz-app`: launch the web UI."""

from __future__ import annotations

import argparse


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bertviz-app", description="See inside BERT in your browser.")
    parser.add_argument("--model", default=None, help="checkpoint folder or hub id (default: the embedded model)")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda (default: auto)")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, this machine only)")
    parser.add_argument("--port", type=int, default=7860)
    args = parser.parse_args(argv)
    from .app import build_demo

    build_demo(args.model, args.device).launch(server_name=args.host, server_port=args.port)


if __name__ == "__main__":
    main()
