package oauth

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/duckicelake/duckicelake/governance"
	"github.com/duckicelake/duckicelake/internal/defaults"
	"github.com/duckicelake/duckicelake/internal/httplimit"
)

// Config configures a Server. Zero values select the defaults named on each
// field.
type Config struct {
	// Audience is the aud claim: the catalog's name.
	Audience string
	// Key signs and verifies the tokens (HS256), at least MinKeyLen bytes.
	Key []byte
	// TokenTTL is the lifetime of an access token (1h).
	TokenTTL time.Duration
	// SessionTTL bounds a session: from the client-credentials grant that
	// started it, no token exchange yields a token valid past it (12h).
	SessionTTL time.Duration
	// Clients is the registry.
	Clients []Client
	// MaxFailuresPerClient and MaxFailuresPerIP are the failed
	// authentications a client id, and a source address (IPv6: its /64),
	// may make per FailureWindow before further attempts are answered 429
	// until the window has refilled (10 and 50 per minute).
	MaxFailuresPerClient int
	MaxFailuresPerIP     int
	FailureWindow        time.Duration
	// Services are in-process clients (the MCP server's broker): they have
	// no secret, so the token endpoint never issues them a token; Mint
	// does, and their tokens verify like any client's while the process
	// that registered them runs.
	Services []Client
}

// Defaults of Config.
const (
	DefaultTokenTTL             = time.Hour
	DefaultSessionTTL           = 12 * time.Hour
	DefaultMaxFailuresPerClient = 10
	DefaultMaxFailuresPerIP     = 50
	DefaultFailureWindow        = time.Minute
	// MinKeyLen is the shortest Key accepted, in bytes.
	MinKeyLen = 32
	// limiterKeys bounds the keys each failure limiter remembers.
	limiterKeys = 1 << 16
	// cacheEntries bounds the verified tokens remembered.
	cacheEntries = 16384
)

func (c *Config) applyDefaults() {
	c.TokenTTL = defaults.Positive(c.TokenTTL, DefaultTokenTTL)
	c.SessionTTL = defaults.Positive(c.SessionTTL, DefaultSessionTTL)
	c.MaxFailuresPerClient = defaults.Positive(c.MaxFailuresPerClient, DefaultMaxFailuresPerClient)
	c.MaxFailuresPerIP = defaults.Positive(c.MaxFailuresPerIP, DefaultMaxFailuresPerIP)
	c.FailureWindow = defaults.Positive(c.FailureWindow, DefaultFailureWindow)
}

// Deps are what a Server reports to.
type Deps struct {
	// Logger receives every refusal with its reason; nil discards.
	Logger *zap.Logger
	// Audit receives an event per token request (issued or refused); nil
	// discards.
	Audit governance.Sink
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Server is the token endpoint with its registry, keys and limits.
type Server struct {
	cfg     Config
	clients map[string]*Client
	log     *zap.Logger
	audit   governance.Sink
	now     func() time.Time

	cache     tokenCache
	perClient *failureLimiter
	perIP     *failureLimiter

	// limitedLog keeps a flood of rate-limited attempts from also being a
	// flood of log lines.
	limitedLog httplimit.LogRate
}

// New checks cfg and builds the Server.
func New(cfg Config, deps Deps) (*Server, error) {
	cfg.applyDefaults()
	if len(cfg.Key) < MinKeyLen {
		return nil, fmt.Errorf("oauth: token key is %d bytes, need at least %d", len(cfg.Key), MinKeyLen)
	}
	if cfg.SessionTTL < cfg.TokenTTL {
		return nil, errors.New("oauth: the session lifetime is shorter than the token lifetime")
	}
	s := &Server{cfg: cfg, clients: make(map[string]*Client, len(cfg.Clients)),
		log: deps.Logger, audit: deps.Audit, now: deps.Now,
		perClient: newFailureLimiter(cfg.MaxFailuresPerClient, cfg.FailureWindow, limiterKeys),
		perIP:     newFailureLimiter(cfg.MaxFailuresPerIP, cfg.FailureWindow, limiterKeys),
	}
	for i := range cfg.Clients {
		c := &cfg.Clients[i]
		if s.clients[c.ID] != nil {
			return nil, fmt.Errorf("oauth: client %q is configured twice", c.ID)
		}
		if _, err := governance.ParseScopes(c.Scopes); err != nil {
			return nil, fmt.Errorf("oauth: client %q: %w", c.ID, err)
		}
		s.clients[c.ID] = c
	}
	for i := range cfg.Services {
		c := &cfg.Services[i]
		if s.clients[c.ID] != nil {
			return nil, fmt.Errorf("oauth: client %q is reserved for an in-process service", c.ID)
		}
		if c.Secret != "" {
			return nil, fmt.Errorf("oauth: service %q has a secret; services get tokens by Mint only", c.ID)
		}
		if _, err := governance.ParseScopes(c.Scopes); err != nil {
			return nil, fmt.Errorf("oauth: service %q: %w", c.ID, err)
		}
		s.clients[c.ID] = c
	}
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.audit == nil {
		s.audit = governance.Discard
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.cache.Max = cacheEntries
	return s, nil
}
