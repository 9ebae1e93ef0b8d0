#!/usr/bin/env bash
# Regenerates the Go code of capgate's protobuf files (committed beside them). Needs protoc
# (Debian: apt-get install protobuf-compiler) and the two Go plugins at the pinned versions:
#   go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
#   go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
set -euo pipefail
cd "$(dirname "$0")"
PATH="$(go env GOPATH)/bin:$PATH"
protoc --proto_path=. \
	--go_out=. --go_opt=paths=source_relative \
	--go-grpc_out=. --go-grpc_opt=paths=source_relative \
	capgate/provider/v1/provider.proto
