// Package conform is a conformance suite for HTTP/2 clients: a strict and
// hostile server that answers each test case's request with a script of raw
// frames (written with x/net's Framer, so any frame, valid or not, can be
// sent) and reads every frame the client sends back. Each case states the
// reaction RFC 9113, RFC 7541 or RFC 9218 requires of the client — a
// connection error (GOAWAY with a code, or the connection closed), a stream
// error (RST_STREAM with a code), or that the request completes with the
// exact body — and the verdict is read off the wire and the client's exit
// status, not left to the client under test.
//
// Every case is served on its own URL path (/case/<id>) and its own
// connections: the server picks a connection's case from the path of its
// first request. The runner starts a client once per case (a shell command
// with {url}, or an in-process Client) with a timeout, and reports per case
// as text (like h2spec) and JUnit XML.
package conform
