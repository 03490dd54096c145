package h2

import (
	"fmt"
	"net/http"
	"net/url"

	"golang.org/x/net/http2"
)

// Server push, client role (Config.OnPush). A promised stream is created
// half-closed (local) when its PUSH_PROMISE is complete: the client sends
// nothing on it, and the response arrives on it like the response to a
// request of ours (onResponseHeaders, readBody, SMig continuations).

func (c *Conn) onPushPromise(f *http2.PushPromiseFrame) error {
	if !c.client || c.cfg.OnPush == nil {
		return connError{http2.ErrCodeProtocol, "PUSH_PROMISE received but push is not enabled"}
	}
	if c.isOurs(f.PromiseID) || f.PromiseID <= c.peerMaxStream {
		return connError{http2.ErrCodeProtocol, fmt.Sprintf("PUSH_PROMISE promises stream %d, which the server cannot open", f.PromiseID)}
	}
	c.peerMaxStream = f.PromiseID
	c.hb = headerBlock{
		active:   true,
		id:       f.StreamID,
		promised: f.PromiseID,
		fields:   c.hb.fields[:0],
	}
	return c.headerFragment(f.HeaderBlockFragment(), f.HeadersEnded())
}

// onPromisedRequest handles a complete PUSH_PROMISE header block: it
// opens the promised stream and hands its response to OnPush once it comes.
func (c *Conn) onPromisedRequest() error {
	hb := &c.hb
	// A promise we do not take fails only the promised stream; later
	// frames on it are those of a closed stream.
	refuse := func(code http2.ErrCode) error {
		c.queueControlLocked(wframe{kind: wRST, id: hb.promised, val: uint32(code)})
		return nil
	}
	parent := c.streams.get(hb.id)
	switch {
	case parent == nil && !c.idleLocked(hb.id):
		return refuse(http2.ErrCodeCancel) // we reset the request while the promise was in flight
	case parent == nil || !parent.ours || parent.state != stateOpen && parent.state != stateHalfClosedLocal:
		// RFC 9113 8.4: only on a request stream open for the server.
		return connError{http2.ErrCodeProtocol, fmt.Sprintf("PUSH_PROMISE on stream %d, which is not an open request", hb.id)}
	}
	if hb.bad != "" || hb.tooLarge {
		return refuse(http2.ErrCodeProtocol)
	}
	rh, err := parseRequestFields(hb.fields)
	if err != nil || rh.method != http.MethodGet && rh.method != http.MethodHead || rh.contentLength > 0 {
		return refuse(http2.ErrCodeProtocol)
	}
	u, err := url.ParseRequestURI(rh.path)
	if err != nil {
		return refuse(http2.ErrCodeProtocol)
	}
	u.Scheme, u.Host = rh.scheme, rh.authority
	req := &http.Request{
		Method:     rh.method,
		URL:        u,
		Proto:      "HTTP/2.0",
		ProtoMajor: 2,
		Header:     fieldsToHeader(hb.fields),
		Body:       http.NoBody,
		Host:       rh.authority,
	}
	st := c.newStream(hb.promised, false)
	st.state = stateHalfClosedLocal
	st.resc = make(chan struct{})
	st.req = req
	st.isHead = rh.method == http.MethodHead
	onPush := c.cfg.OnPush
	go func() {
		<-st.resc
		c.mu.Lock()
		res := st.res
		c.mu.Unlock()
		if res != nil {
			onPush(c, req, res)
		}
	}()
	return nil
}
