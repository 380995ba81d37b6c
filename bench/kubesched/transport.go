// The transports kube-scheduler v1.30 builds: the extender's (pkg/scheduler/extender.go
// makeTransport: utilnet.SetTransportDefaults(&http.Transport{TLSClientConfig: ...}), which leaves
// MaxIdleConnsPerHost at Go's default of 2 and negotiates HTTP/2 by ALPN) and client-go's for the
// API server (k8s.io/client-go/transport/cache.go: 25 idle connections per host).
package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// extenderTransport is makeTransport's transport: SetOldTransportDefaults (DialContext of
// http.DefaultTransport, TLSHandshakeTimeout 10s, IdleConnTimeout 90s), HTTP/2 as
// http2.ConfigureTransport enables it (ForceAttemptHTTP2 stands in: the same ALPN offer of h2
// and http/1.1), no MaxIdleConnsPerHost (Go's DefaultMaxIdleConnsPerHost, 2), and the TLS
// configuration of restclient.TLSConfigFor (TLS 1.2 minimum, the CA, the client certificate; no
// ClientSessionCache, so no session resumption).
func extenderTransport(ca, cert, key string, http2 bool) (*http.Transport, error) {
	t := defaults()
	t.ForceAttemptHTTP2 = http2
	if ca == "" {
		return t, nil
	}
	pem, err := os.ReadFile(ca)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", ca)
	}
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		return nil, err
	}
	t.TLSClientConfig = &tls.Config{
		MinVersion:   tls.VersionTLS12,
		RootCAs:      pool,
		Certificates: []tls.Certificate{pair},
		// Go 1.22's defaults (kube-scheduler v1.30's toolchain): no post-quantum hybrid
		CurvePreferences: []tls.CurveID{tls.X25519, tls.CurveP256, tls.CurveP384, tls.CurveP521},
	}
	if !http2 {
		t.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	return t, nil
}

// apiTransport is client-go's transport for the API server (plain HTTP here, as the test API
// server serves): 25 idle connections per host (client-go transport/cache.go idleConnsPerHost).
func apiTransport() *http.Transport {
	t := defaults()
	t.MaxIdleConnsPerHost = 25
	return t
}

// defaults is utilnet.SetOldTransportDefaults on an empty transport: http.DefaultTransport's
// proxy, dialer (30s timeout and keep-alive), TLS handshake timeout (10s) and idle timeout (90s).
func defaults() *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     90 * time.Second,
	}
}
