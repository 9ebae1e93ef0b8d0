#!/usr/bin/env bash
# Rebuilds the example plugin packages kb-1.0.0, kb-1.1.0 and kb-1.2.0 from src/: lays out each
# package's content, declares its digest, its SBOM and provenance digests, its previous version
# and the permissions delta capgate recomputes, and signs it with ed25519.key (an example key,
# kept here for the example only). Needs python3 for the JSON edits; run from anywhere.
set -euo pipefail
cd "$(dirname "$0")"
capgate() { go run ../../cmd/capgate "$@"; }
chmod 600 ed25519.key
prev=""
for v in 1.0.0 1.1.0 1.2.0; do
	pkg="kb-$v"
	rm -rf "$pkg" && mkdir -p "$pkg/index"
	printf 'Knowledge base plugin %s\n' "$v" > "$pkg/README.md"
	printf '{"spdxVersion":"SPDX-2.3","name":"org.example.kb","versionInfo":"%s"}\n' "$v" > "$pkg/sbom.spdx.json"
	printf '{"builder":"examples/plugins/make.sh","version":"%s"}\n' "$v" > "$pkg/provenance.json"
	printf 'stop words: a an the\n' > "$pkg/index/stopwords.txt"
	echo '{}' > "$pkg/manifest.json"
	DIGESTS=$(capgate plugin digest "$pkg") python3 - "src/$pkg.json" "$pkg/unsigned.json" <<'PY'
import json, os, sys
m = json.load(open(sys.argv[1]))
lines = os.environ["DIGESTS"].splitlines()
m["digest"] = lines[0].strip()
files = {l.split()[1]: l.split()[0] for l in lines[1:]}
m["sbom_ref"]["digest"] = files[m["sbom_ref"]["path"]]
m["provenance_ref"]["digest"] = files[m["provenance_ref"]["path"]]
json.dump(m, open(sys.argv[2], "w"), indent=2)
PY
	if [ -n "$prev" ]; then
		DELTA=$(capgate manifest diff --delta "$prev/manifest.json" "$pkg/unsigned.json") PREV="$prev" python3 - "$pkg/unsigned.json" <<'PY'
import json, os, sys
m = json.load(open(sys.argv[1]))
m["previous_version"] = json.load(open(os.environ["PREV"] + "/manifest.json"))["version"]
m["permissions_delta"] = json.loads(os.environ["DELTA"])
json.dump(m, open(sys.argv[1], "w"), indent=2)
PY
	fi
	capgate manifest sign --key ed25519.key -o "$pkg/manifest.json" "$pkg/unsigned.json"
	rm "$pkg/unsigned.json"
	prev="$pkg"
done
