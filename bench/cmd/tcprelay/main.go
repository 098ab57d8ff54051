// Command tcprelay is the floor a proxy hop can reach: it accepts TCP
// connections and relays each, byte for byte, to one backend — no HTTP, no
// authentication, nothing parsed. scripts/bench.sh puts it in front of the
// same backend as the gateway, so that every gateway figure has two
// references in one run: the backend direct, and the cost of a second
// loopback hop alone. Clients sign for the backend's own keys: the relay is
// transparent (the Host header they sign is the relay's, and the backend
// verifies the header it receives).
//
// Both directions are io.Copy between *net.TCPConn, which Go turns into
// splice(2) on Linux: bytes move socket to socket in the kernel, as the
// gateway's download path moves them.
//
// Usage:
//
//	tcprelay -listen 127.0.0.1:7071 -backend 127.0.0.1:7070
//
// It prints "tcprelay: listening on ADDR" once it accepts, and stops on
// SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to accept on")
	backend := flag.String("backend", "", "host:port to relay every connection to (required)")
	flag.Parse()
	if *backend == "" {
		fmt.Fprintln(os.Stderr, "tcprelay: -backend is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *listen, *backend); err != nil {
		fmt.Fprintln(os.Stderr, "tcprelay:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, listen, backend string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "tcprelay: listening on", ln.Addr(), "relaying to", backend)
	var wg sync.WaitGroup
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	d := net.Dialer{Timeout: 5 * time.Second}
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("accept: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			relay(ctx, &d, c.(*net.TCPConn), backend)
		}()
	}
	wg.Wait()
	return nil
}

// relay copies client ↔ backend until both directions end. A direction that
// ends (EOF) is passed on as a half-close, as a byte-level relay must: HTTP
// clients may close their side and still read the answer.
func relay(ctx context.Context, d *net.Dialer, client *net.TCPConn, backend string) {
	defer client.Close()
	bc, err := d.DialContext(ctx, "tcp", backend)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tcprelay: dial backend:", err)
		return
	}
	up := bc.(*net.TCPConn)
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { client.Close(); up.Close() })
	defer stop()
	done := make(chan struct{})
	go func() {
		pipe(up, client)
		close(done)
	}()
	pipe(client, up)
	<-done
}

// pipe moves src's bytes to dst; both are *net.TCPConn, so dst.ReadFrom
// splices.
func pipe(dst, src *net.TCPConn) {
	io.Copy(dst, src) //nolint:errcheck // a reset or a close ends the relay either way
	dst.CloseWrite()  //nolint:errcheck
}
