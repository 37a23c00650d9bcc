// Command server runs taskhook.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/taskhook/taskhook/app"
)

func main() {
	cfg, err := app.FromEnv(os.Args[1:], os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "taskhook:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, cfg, os.Stderr, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "taskhook:", err)
		os.Exit(1)
	}
}
