"""The sandbox as an HTTP service (`codeloop serve`, docs/SERVICE.md).

- `app`: the ASGI app factory (`create_app(Settings)`) and the way into the sandbox;
- `fusion`: SandboxFusion's `POST /run_code` and `GET /v1/ping`;
- `native`: `POST /v1/check`, a `CheckRequest` in, the sandbox's `Check` out;
- `limits`: settings, the bearer token, size limits, the bounded queue;
- `metrics`: Prometheus `/metrics` and the JSON access log;
- `cli`: the `codeloop serve` command.
"""
