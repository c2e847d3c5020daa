//go:build tools

// Package tools pins the code generators and developer tools faucet's Taskfile
// runs, so `go run <tool>` always uses the version recorded in go.mod.
package tools

import (
	_ "github.com/bufbuild/buf/cmd/buf"
	_ "github.com/go-task/task/v3/cmd/task"
	_ "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen"
	_ "github.com/ogen-go/ogen/cmd/ogen"
	_ "github.com/pressly/goose/v3/cmd/goose"
	_ "github.com/sqlc-dev/sqlc/cmd/sqlc"
	_ "google.golang.org/grpc/cmd/protoc-gen-go-grpc"
	_ "google.golang.org/protobuf/cmd/protoc-gen-go"
	_ "honnef.co/go/tools/cmd/staticcheck"
)
