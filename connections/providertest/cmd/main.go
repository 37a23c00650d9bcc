// Command cmd runs the fake OAuth provider of package providertest on its
// own, to try provider sign-in by hand: it writes a connections file naming
// it, then serves until interrupted.
//
//	go run ./connections/providertest/cmd -addr 127.0.0.1:9999 -file /tmp/connections.json
//	TASKHOOK_CONNECTIONS_FILE=/tmp/connections.json go run ./cmd/server
//
// Its /authorize agrees at once (add deny=1 to the URL to decline), and its
// /introspect tells a resource server whether a token is one it issued.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/taskhook/taskhook/connections/providertest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9999", "where to listen")
	file := flag.String("file", "connections.json", "the connections file to write")
	name := flag.String("name", "devbox", "the connection's name")
	callback := flag.String("callback", "path", `where the redirect carries the attempt: "path" or "state"`)
	flag.Parse()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	p := providertest.NewProvider()
	p.URL = "http://" + ln.Addr().String()
	raw, err := json.MarshalIndent([]map[string]any{p.Connection(*name, *callback, "read")}, "", "  ")
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*file, append(raw, '\n'), 0o600); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("fake provider at %s; connection %q written to %s\n", p.URL, *name, *file)
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}
