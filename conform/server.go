package conform

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/shunt-net/shunt/server"
)

// Server is the hostile server: it serves each connection by the case its
// first request names.
type Server struct {
	ln  net.Listener
	tls *tls.Config // nil: h2c with prior knowledge

	mu    sync.Mutex
	cases map[string]*caseState // the cases running now, by id
	wg    sync.WaitGroup
}

// caseState is one run of a case: its connections and what its scripts noted.
type caseState struct {
	c     *Case
	mu    sync.Mutex
	conns []*ConnLog
	ncs   []net.Conn
	notes []string
	wg    sync.WaitGroup // the case's connection goroutines
}

func (st *caseState) note(s string) {
	st.mu.Lock()
	st.notes = append(st.notes, s)
	st.mu.Unlock()
}

// Listen starts a server on addr (host:port; port 0 picks one), with TLS
// (ALPN h2, a self-signed certificate for localhost) or h2c.
func Listen(addr string, useTLS bool) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, cases: map[string]*caseState{}}
	if useTLS {
		cert, err := server.SelfSignedCert(time.Now())
		if err != nil {
			ln.Close()
			return nil, err
		}
		s.tls = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}}
	}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// URL is the case's URL on this server.
func (s *Server) URL(c *Case) string {
	scheme := "http"
	if s.tls != nil {
		scheme = "https"
	}
	_, port, _ := net.SplitHostPort(s.ln.Addr().String())
	return fmt.Sprintf("%s://localhost:%s/case/%s", scheme, port, c.ID)
}

// Close stops accepting and waits for the connection goroutines.
func (s *Server) Close() error {
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.serve(nc)
	}
}

// begin registers a case run, so connections naming it are served.
func (s *Server) begin(c *Case) *caseState {
	st := &caseState{c: c}
	s.mu.Lock()
	s.cases[c.ID] = st
	s.mu.Unlock()
	return st
}

// end closes the case's connections once they ended by themselves or
// grace passed, waits for its scripts, and returns its connection logs.
func (s *Server) end(st *caseState, grace time.Duration) ([]*ConnLog, []string) {
	s.mu.Lock()
	delete(s.cases, st.c.ID)
	s.mu.Unlock()
	deadline := time.Now().Add(grace)
	st.mu.Lock()
	conns := append([]*ConnLog(nil), st.conns...)
	st.mu.Unlock()
	for _, l := range conns {
		l.mu.Lock()
		for !l.Ended && time.Now().Before(deadline) {
			waitFor(l.cond, time.Until(deadline))
		}
		l.mu.Unlock()
	}
	st.mu.Lock()
	for _, nc := range st.ncs {
		nc.Close()
	}
	st.mu.Unlock()
	st.wg.Wait()
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.conns, st.notes
}

// serve reads the client's preface and first request, finds the case it
// names and runs the case's script on the connection.
func (s *Server) serve(nc net.Conn) {
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if s.tls != nil {
		tc := tls.Server(nc, s.tls)
		if err := tc.Handshake(); err != nil {
			return
		}
		nc = tc
		if p := tc.ConnectionState().NegotiatedProtocol; p != "h2" {
			s.refuseHTTP1(nc, bufio.NewReader(nc), fmt.Sprintf("the client did not choose h2 by ALPN (%q)", p))
			return
		}
	}
	br := bufio.NewReader(nc)
	preface, err := br.Peek(len(http2.ClientPreface))
	if err != nil {
		return
	}
	if string(preface) != http2.ClientPreface {
		s.refuseHTTP1(nc, br, "the client spoke HTTP/1.1, not HTTP/2 with prior knowledge")
		return
	}
	br.Discard(len(preface))

	log := newConnLog()
	fr := http2.NewFramer(nc, br)
	fr.AllowIllegalWrites = true
	fr.SetMaxReadFrameSize(1<<24 - 1) // a client's frame over our limit is logged, and judged, not refused here
	dec := hpack.NewDecoder(4096, nil)
	var hb bytes.Buffer
	// The client's frames up to its first complete request.
	var path string
	var stream uint32
	for path == "" {
		f, err := readFrame(fr, dec, &hb)
		if err != nil {
			return
		}
		log.add(f)
		if f.Path != "" {
			path, stream = f.Path, f.Stream
		}
	}
	nc.SetDeadline(time.Time{})
	id := strings.TrimPrefix(path, "/case/")
	s.mu.Lock()
	st := s.cases[id]
	s.mu.Unlock()
	if st == nil {
		fr.WriteSettings()
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: block(hf(":status", "404")), EndStream: true, EndHeaders: true})
		fr.WriteGoAway(stream, http2.ErrCodeNo, nil)
		return
	}
	st.mu.Lock()
	st.conns = append(st.conns, log)
	st.ncs = append(st.ncs, nc)
	attempt := len(st.conns)
	st.wg.Add(1)
	st.mu.Unlock()
	defer st.wg.Done()

	sess := &Session{Case: st.c, Attempt: attempt, Stream: stream, Path: path, nc: nc, fr: fr, log: log, st: st}
	// Frames the client sent before its request are answered now.
	log.mu.Lock()
	for _, f := range log.Frames {
		if f.Type == http2.FrameSettings && f.Flags&http2.FlagSettingsAck == 0 {
			sess.pendingAcks++
		}
	}
	log.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		sess.readFrames(fr, dec, &hb)
	}()
	if err := s.script(sess); err != nil && err != errEnded && !isClosed(err) {
		st.note("server script: " + err.Error())
	}
	<-done // the client's frames until it closes, or the case ends
}

// script sends the case's preface and runs its script.
func (s *Server) script(sess *Session) error {
	c := sess.Case
	var err error
	if c.Preface != nil {
		err = c.Preface(sess)
	} else {
		err = sess.Settings()
	}
	sess.prefaceDone()
	if err != nil {
		return err
	}
	if c.Serve == nil {
		return sess.Respond()
	}
	return c.Serve(sess)
}

// refuseHTTP1 answers an HTTP/1.1 request with 505 and notes why its case failed.
func (s *Server) refuseHTTP1(nc net.Conn, br *bufio.Reader, why string) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	s.mu.Lock()
	st := s.cases[strings.TrimPrefix(req.URL.Path, "/case/")]
	s.mu.Unlock()
	if st != nil {
		st.note(why)
	}
	io.WriteString(nc, "HTTP/1.1 505 HTTP Version Not Supported\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
}

func isClosed(err error) bool {
	return err == io.EOF || strings.Contains(err.Error(), "use of closed network connection") ||
		strings.Contains(err.Error(), "broken pipe") || strings.Contains(err.Error(), "connection reset")
}
