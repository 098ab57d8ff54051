// Package httplimit is what both listeners (the gateway's S3 one and the
// catalog/admin one) do before a request reaches their handler: admitting
// connections under a total and a per-client-address limit (Limiter,
// Listener), answering a refused connection without the reset that would
// destroy the answer (Refuser), and naming the web server's own parse
// failures (ParseFailureOf) so that each listener answers them in its
// protocol's error shape (S3 XML, Iceberg ErrorModel JSON) instead of
// fasthttp's plain text. LogRate keeps a flood of refusals (connections,
// rate-limited token requests) from also being a flood of log lines.
//
// It imports fasthttp only; the gateway and cmd/duckicelake (the catalog
// listener) and catalog/oauth (client addresses, log rates) use it.
package httplimit
