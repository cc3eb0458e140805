// Command toxiproxy-server runs Toxiproxy v2.12.0's API server (the library, unchanged) with one toxic of the
// lab's own registered beside the stock ones: latency_us (latency_us.go). This is the extension route
// Toxiproxy's CREATING_TOXICS.md documents (build your own server binary that registers the toxic), so no
// fork is needed. The flags the lab uses match the stock server's: -host, -port, -config, -version; the log
// level comes from LOG_LEVEL. scripts/install-deps.sh builds it; lab/faults/toxiproxy.ts detects it by its
// main module path.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/Shopify/toxiproxy/v2"
)

// sourceHash is set by scripts/install-deps.sh (-ldflags -X) to a hash of this directory, so it can tell
// whether the installed binary was built from the current sources (-trimpath keeps -ldflags out of
// `go version -m`, so -version prints it).
var sourceHash = "unknown"

func main() {
	host := flag.String("host", "localhost", "host the API listens on")
	port := flag.String("port", "8474", "port the API listens on")
	config := flag.String("config", "", "JSON file of proxies to create on startup")
	printVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()

	// A release build sets the version with -ldflags; here it is the Toxiproxy dependency's ("2.12.0"), so
	// -version and GET /version do not say "git".
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/Shopify/toxiproxy/v2" {
				toxiproxy.Version = strings.TrimPrefix(dep.Version, "v")
			}
		}
	}
	if *printVersion {
		fmt.Printf("toxiproxy-server version %s\n", toxiproxy.Version)
		fmt.Printf("cachelab build: +latency_us, sources %s\n", sourceHash)
		return
	}

	logger := zerolog.New(os.Stdout).With().Timestamp().Logger()
	if level, err := zerolog.ParseLevel(os.Getenv("LOG_LEVEL")); err == nil && os.Getenv("LOG_LEVEL") != "" {
		logger = logger.Level(level)
	}

	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), logger)
	if *config != "" {
		server.PopulateConfig(*config)
	}
	go func() {
		if err := server.Listen(net.JoinHostPort(*host, *port)); err != nil {
			logger.Err(err).Msg("API server stopped")
			os.Exit(1)
		}
	}()

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
	if err := server.Shutdown(); err != nil {
		logger.Err(err).Msg("shutdown failed")
		os.Exit(1)
	}
}
