"""The `octet` command (also `python -m octet`).

    octet serve model.so [--tokenizer DIR] [--replicas N] [--threads T] [--port P]
                         [--host H] [--max-batch-size B] [--batch-wait-ms W] [--address RAY]
                         [--constants huge_pages|mapped]

serve: deploys the model.so on Ray Serve (docs/serving.md) and serves it until interrupted.
It joins the Ray cluster at --address (default: $RAY_ADDRESS, else a local one is started).
"""
import argparse
import sys
import time


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="octet", description="Octet's command line")
    commands = parser.add_subparsers(dest="command", required=True)
    s = commands.add_parser("serve", help="serve a model.so over HTTP with Ray Serve")
    s.add_argument("model", help="a model.so (octet.compile_to_so, octetc compile)")
    s.add_argument("--tokenizer", help="a sentence-transformers folder: accept {\"sentences\": [...]}")
    s.add_argument("--replicas", type=int, default=1)
    s.add_argument("--threads", type=int, default=1, help="OpenMP threads per replica")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--max-batch-size", type=int, default=16)
    s.add_argument("--batch-wait-ms", type=float, default=5.0)
    s.add_argument("--max-length", type=int, default=512)
    s.add_argument("--address", help="the Ray cluster (default: $RAY_ADDRESS or a local one)")
    s.add_argument("--constants", choices=("huge_pages", "mapped"), default="huge_pages",
                   help="each replica's copy of the weights on 2 MiB pages (default), or the "
                        "file's pages shared by the replicas of a node")
    args = parser.parse_args(argv)

    import os
    if not os.path.isfile(args.model):
        print(f"octet serve: error: no such file '{args.model}'", file=sys.stderr)
        return 2
    import ray
    from . import serve
    ray.init(address=args.address, include_dashboard=False)
    app = serve.build_app(args.model, tokenizer=args.tokenizer, replicas=args.replicas,
                          threads=args.threads, max_batch_size=args.max_batch_size,
                          batch_wait_timeout_s=args.batch_wait_ms / 1e3, max_length=args.max_length,
                          constants=args.constants)
    serve.run(app, host=args.host, port=args.port)
    print(f"octet serve: {args.model} on http://{args.host}:{args.port}/ ({args.replicas} "
          f"replica(s) x {args.threads} thread(s)); Ctrl-C stops", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        from ray import serve as ray_serve
        ray_serve.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
