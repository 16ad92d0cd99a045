#!/usr/bin/env bash
# Print the path of a Go >= 1.26 toolchain, fetching one if none is installed:
# `tools/install-go.sh` -> /usr/local/go/bin/go, or ~/.cache/apta/go/<version>/bin/go.
# Go toolchains are modules on the Go module proxy (golang.org/toolchain, what GOTOOLCHAIN=auto
# downloads), so the fetch uses only a registry these machines reach (HTTPS; sum.golang.org, the
# checksum database, is not reachable here, so the zip is not checked against it).
set -euo pipefail
VERSION=1.26.8
ok() { "$1" version 2>/dev/null | grep -qE 'go1\.(2[6-9]|[3-9][0-9])'; }
for g in "$(command -v go || true)" /usr/local/go/bin/go "$HOME/.cache/apta/go/$VERSION/bin/go"; do
  if [ -n "$g" ] && [ -x "$g" ] && ok "$g"; then echo "$g"; exit 0; fi
done
mod="golang.org/toolchain@v0.0.1-go$VERSION.linux-amd64"
dest="$HOME/.cache/apta/go/$VERSION"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
echo "go: fetching $mod from proxy.golang.org" >&2
curl -fsSL -o "$tmp/go.zip" "https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-go$VERSION.linux-amd64.zip"
command -v unzip >/dev/null || "$(dirname "$0")/install-apt.sh" unzip >&2
unzip -q "$tmp/go.zip" -d "$tmp/x"
mkdir -p "$(dirname "$dest")"
rm -rf "$dest"; mv "$tmp/x/$mod" "$dest"
chmod +x "$dest"/bin/* "$dest"/pkg/tool/*/* 2>/dev/null || true
ok "$dest/bin/go" || { echo "go: $dest/bin/go does not run" >&2; exit 1; }
echo "$dest/bin/go"
