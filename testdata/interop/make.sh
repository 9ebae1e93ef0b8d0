#!/usr/bin/env bash
# make.sh builds the interoperability vectors in this folder with OpenSSL 3 and
# Python 3 only, so that capgate's Go verifier is checked against a signer it
# shares no code with. See README.md for what each file is.
#
# Usage: ./make.sh [--new-key]
#
# The signing key signer.pem is generated on the first run and reused after
# that. Ed25519 signatures are deterministic, so re-running without --new-key
# reproduces every file byte for byte (a cheap check that nothing drifted);
# --new-key replaces the key and so changes the public key and every signature.
set -euo pipefail
cd "$(dirname "$0")"

APP_ID=org.example.notes
PUB="$APP_ID.pub"

die() { echo "make.sh: $*" >&2; exit 1; }

command -v openssl >/dev/null || die "openssl not found"
command -v python3 >/dev/null || die "python3 not found"
case "$(openssl version)" in
  "OpenSSL 3."*) ;;
  *) die "need OpenSSL 3 (for pkeyutl -rawin with Ed25519), have: $(openssl version)" ;;
esac
[ -f manifest.unsigned.json ] || die "manifest.unsigned.json is missing"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# 1. The key. A test key, checked in on purpose: never use it for anything else.
if [ "${1:-}" = "--new-key" ] || [ ! -f signer.pem ]; then
  openssl genpkey -algorithm ed25519 -out "$tmp/signer.pem"
  mv "$tmp/signer.pem" signer.pem
fi
chmod 0600 signer.pem

# The raw public key is the last 32 bytes of the DER SubjectPublicKeyInfo
# (a fixed 12-byte header 302a300506032b6570032100, then the key).
openssl pkey -in signer.pem -pubout -outform DER -out "$tmp/pub.der"
[ "$(wc -c <"$tmp/pub.der")" -eq 44 ] || die "unexpected SubjectPublicKeyInfo length"
[ "$(head -c 12 "$tmp/pub.der" | od -An -tx1 | tr -d ' \n')" = "302a300506032b6570032100" ] \
  || die "unexpected SubjectPublicKeyInfo header"
tail -c 32 "$tmp/pub.der" >"$PUB"
chmod 0644 "$PUB"

# 2-4. Canonical bytes, signature and the signed, tampered and bad-signature
# documents. Python does the JSON work; OpenSSL does all the cryptography.
python3 - canon <<'PY'
import json, sys

def strict_load(path):
    def pairs(items):
        keys = [k for k, _ in items]
        if len(keys) != len(set(keys)):
            sys.exit(f"{path}: duplicate member name")
        return dict(items)
    def no_float(s):
        sys.exit(f"{path}: float {s!r}: the vectors keep numbers integers, where JCS and json.dumps agree")
    text = open(path, encoding="utf-8").read()
    if not text.isascii():
        sys.exit(f"{path}: non-ASCII text: the json.dumps recipe equals RFC 8785 only for ASCII")
    return json.loads(text, object_pairs_hook=pairs, parse_float=no_float,
                      parse_constant=lambda c: sys.exit(f"{path}: {c} is not JSON"))

def canonical(doc):
    # RFC 8785 (JCS) for ASCII-only documents without floats.
    doc = {k: v for k, v in doc.items() if k != "signature"}
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

doc = strict_load("manifest.unsigned.json")
if "signature" in doc:
    sys.exit("manifest.unsigned.json: already has a signature member")
open("manifest.canonical", "wb").write(canonical(doc))  # no trailing newline
PY

openssl pkeyutl -sign -rawin -inkey signer.pem -in manifest.canonical -out manifest.sig
[ "$(wc -c <manifest.sig)" -eq 64 ] || die "signature is not 64 bytes"

python3 - <<'PY'
import base64, json, sys

sig = open("manifest.sig", "rb").read()
assert len(sig) == 64
value = "ed25519:" + base64.b64encode(sig).decode("ascii")

# Insert the signature as the last member by editing the text, so the signed
# document keeps the unsigned one's exact bytes, indentation and member order.
text = open("manifest.unsigned.json", encoding="utf-8").read()
body = text.rstrip()
if not body.endswith("}"):
    sys.exit("manifest.unsigned.json: does not end with '}'")
body = body[:-1].rstrip()
signed = body + ',\n  "signature": ' + json.dumps(value) + "\n}\n"
unsigned_doc = json.loads(text)
signed_doc = json.loads(signed)
assert list(signed_doc)[-1] == "signature"
assert {k: v for k, v in signed_doc.items() if k != "signature"} == unsigned_doc
open("manifest.signed.json", "w", encoding="utf-8").write(signed)

# Tampered: one character of one capability's description changes; the
# signature stays. Same length, so the edit is exactly one byte.
old = '"description": "Create a note in a folder and return its id."'
new = '"description": "Create a note in a Folder and return its id."'
assert signed.count(old) == 1
tampered = signed.replace(old, new)
assert len(tampered) == len(signed)
assert sum(a != b for a, b in zip(signed, tampered)) == 1
open("manifest.tampered.json", "w", encoding="utf-8").write(tampered)

# Bad signature: well-formed standard base64, but of 63 bytes, not 64.
short = "ed25519:" + base64.b64encode(sig[:63]).decode("ascii")
assert len(base64.b64decode(short[len("ed25519:"):], validate=True)) == 63
assert signed.count(json.dumps(value)) == 1
open("manifest.badsig.json", "w", encoding="utf-8").write(signed.replace(json.dumps(value), json.dumps(short)))
PY

# 5. Check the output, starting again from the files as written: the public
# key from the raw .pub file (not from signer.pem), the signature and the
# canonical bytes re-derived from each signed document.
{ printf '\x30\x2a\x30\x05\x06\x03\x2b\x65\x70\x03\x21\x00'; cat "$PUB"; } >"$tmp/pub2.der"
openssl pkey -pubin -inform DER -in "$tmp/pub2.der" -out "$tmp/pub.pem"

unpack() { # unpack DOC: writes $tmp/DOC.canonical and $tmp/DOC.sig, prints the signature length
  python3 - "$1" "$tmp" <<'PY'
import base64, json, os, sys
path, tmp = sys.argv[1], sys.argv[2]
doc = json.load(open(path, encoding="utf-8"))
sig = doc.pop("signature")
assert sig.startswith("ed25519:")
raw = base64.b64decode(sig[len("ed25519:"):], validate=True)
base = os.path.join(tmp, os.path.basename(path))
open(base + ".canonical", "wb").write(
    json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
open(base + ".sig", "wb").write(raw)
print(len(raw))
PY
}
verify() { # verify CANONICAL SIG
  openssl pkeyutl -verify -rawin -pubin -inkey "$tmp/pub.pem" -in "$1" -sigfile "$2" >/dev/null 2>&1
}

verify manifest.canonical manifest.sig || die "manifest.sig does not verify over manifest.canonical"

[ "$(unpack manifest.signed.json)" = 64 ] || die "manifest.signed.json: signature is not 64 bytes"
cmp -s "$tmp/manifest.signed.json.canonical" manifest.canonical || die "manifest.signed.json canonicalizes differently"
verify "$tmp/manifest.signed.json.canonical" "$tmp/manifest.signed.json.sig" || die "manifest.signed.json does not verify"

[ "$(unpack manifest.tampered.json)" = 64 ] || die "manifest.tampered.json: signature is not 64 bytes"
if verify "$tmp/manifest.tampered.json.canonical" "$tmp/manifest.tampered.json.sig"; then
  die "manifest.tampered.json verifies, but must not"
fi

[ "$(unpack manifest.badsig.json)" = 63 ] || die "manifest.badsig.json: signature does not decode to 63 bytes"

echo "make.sh: vectors written and checked (public key $(openssl dgst -sha256 -r "$PUB" | cut -d' ' -f1))"
