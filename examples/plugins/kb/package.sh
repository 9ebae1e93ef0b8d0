#!/usr/bin/env bash
# Builds the example knowledge-base provider into a signed plugin package in OUT_DIR: the
# program (CGO_ENABLED=0 go build) as OUT_DIR/provider, its index, README, SBOM and provenance,
# and manifest.json: ../src/kb-2.0.0.json with the package's content digest and the SBOM's and
# provenance's digests filled in (as capgate plugin digest prints them), signed with the example
# key ../ed25519.key (capgate manifest sign) and verified against ../../trusted.
#
#   bash examples/plugins/kb/package.sh "$(mktemp -d)/kb-2.0.0"
#
# OUT_DIR must be absent or empty, and outside the repository: a built package is never
# committed. Needs Go alone; run from anywhere.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: package.sh OUT_DIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
case "$out/" in
"$repo"/*) echo "package.sh: $out is inside the repository; choose a folder outside it, such as \$(mktemp -d)/kb-2.0.0" >&2; exit 2 ;;
esac
if [ -n "$(ls -A "$out")" ]; then
	echo "package.sh: $out is not empty" >&2
	exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cd "$repo"
go build -o "$tmp/capgate" ./cmd/capgate
capgate() { "$tmp/capgate" "$@"; }

# 1. The content: the program, built without cgo (it runs wherever the host runs it) and with
#    -trimpath (the same source builds the same bytes wherever the checkout is), without symbol
#    tables (-s -w: a smaller program to copy and hash at install); and its files.
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$out/provider" ./examples/plugins/kb/provider
mkdir "$out/index"
cp "$here"/index/*.md "$out/index/"
cp "$here/README.md" "$here/sbom.spdx.json" "$here/provenance.json" "$out/"
chmod 644 "$out/index/"*.md "$out/README.md" "$out/sbom.spdx.json" "$out/provenance.json"
chmod 755 "$out/provider"

# 2. The digests: the content digest covers every file but manifest.json (a placeholder here).
echo '{}' > "$out/manifest.json"
digests=$(capgate plugin digest "$out")
content=$(head -n 1 <<<"$digests")
file_digest() { awk -v p="$1" '$2 == p { print $1 }' <<<"$digests"; }
sbom=$(file_digest sbom.spdx.json)
prov=$(file_digest provenance.json)

# 3. The manifest: the source with its three empty digests filled in, signed and verified.
sed -e "s|^  \"digest\": \"\"|  \"digest\": \"$content\"|" \
	-e "s|\"sbom_ref\": {\"path\": \"sbom.spdx.json\", \"digest\": \"\"}|\"sbom_ref\": {\"path\": \"sbom.spdx.json\", \"digest\": \"$sbom\"}|" \
	-e "s|\"provenance_ref\": {\"path\": \"provenance.json\", \"digest\": \"\"}|\"provenance_ref\": {\"path\": \"provenance.json\", \"digest\": \"$prov\"}|" \
	"$here/../src/kb-2.0.0.json" > "$tmp/unsigned.json"
if grep -q '"digest": ""' "$tmp/unsigned.json"; then
	echo "package.sh: a digest of ../src/kb-2.0.0.json was not filled in: keep its three \"digest\": \"\" lines as they are" >&2
	exit 1
fi
install -m 600 "$here/../ed25519.key" "$tmp/ed25519.key" # the example key; a private key is read only at mode 0600
capgate manifest sign --key "$tmp/ed25519.key" -o "$out/manifest.json" "$tmp/unsigned.json"
capgate manifest verify --trusted-dir examples/trusted "$out/manifest.json"
echo "package: $out"
echo "digest:  $content"
