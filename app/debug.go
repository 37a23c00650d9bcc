package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// debugServer serves net/http/pprof on TASKHOOK_DEBUG_ADDR, apart from the
// API: off by default, and only on a loopback address, since profiles show
// the process's insides.
type debugServer struct {
	server *http.Server
	ln     net.Listener
}

// checkDebugAddr refuses an address that is not on loopback.
func checkDebugAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("TASKHOOK_DEBUG_ADDR: %w", err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return errors.New("TASKHOOK_DEBUG_ADDR must be a loopback address such as 127.0.0.1:6060")
	}
	return nil
}

// startDebug listens on addr and serves the profiles.
func startDebug(addr string, log *slog.Logger) (*debugServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	d := &debugServer{ln: ln, server: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}
	go func() {
		if err := d.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("debug listener stopped", "err", err)
		}
	}()
	log.Info("profiles served", "addr", ln.Addr().String())
	return d, nil
}

// stop closes the listener (a profile being taken is cut short).
func (d *debugServer) stop(context.Context) error {
	if d == nil {
		return nil
	}
	return d.server.Close()
}

// DebugAddr is where the profiles are served, "" when they are not.
func (a *App) DebugAddr() string {
	if a.debug == nil {
		return ""
	}
	return a.debug.ln.Addr().String()
}
