// Command server runs taskhook.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/taskhook/taskhook/app"
)

func main() {
	cfg, err := app.FromEnv(os.Args[1:], os.Getenv)
	switch {
	case errors.Is(err, flag.ErrHelp):
		app.Usage(os.Stdout)
		return
	case errors.Is(err, app.ErrVersion):
		fmt.Println(app.Version)
		return
	case err != nil:
		fmt.Fprintln(os.Stderr, "taskhook:", err)
		fmt.Fprintln(os.Stderr, "taskhook -h lists every setting")
		os.Exit(2)
	}
	cfg.Environ = os.Environ()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, cfg, os.Stderr, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "taskhook:", err)
		os.Exit(1)
	}
}
