// Package interop holds shunt's integration tests against other HTTP/2
// implementations: curl, nghttp, h2load and h2spec against `shunt serve`, and
// `shunt get` against nginx and h2o; smig_test.go repeats them with SMig
// enabled on shunt's side, and adds Chromium against shunt serve --smig;
// conform_test.go runs the HTTP/2 client conformance suite (package conform)
// against curl, nghttp and Go's net/http. The
// tests build the shunt binary once and skip, naming the tool, when a peer is
// not installed (bash scripts/setup installs them all).
package interop
