//go:build tools

// Package tools pins the commands this module builds.
package tools

import (
	_ "github.com/tektoncd/pipeline/cmd/controller"
	_ "github.com/tektoncd/pipeline/cmd/entrypoint"
	_ "github.com/tektoncd/pipeline/cmd/nop"
	_ "github.com/tektoncd/pipeline/cmd/resolvers"
	_ "github.com/tektoncd/pipeline/cmd/webhook"
	_ "github.com/tektoncd/pipeline/cmd/workingdirinit"
)
