package shunt
import (
_ "golang.org/x/net/http2"
_ "golang.org/x/net/http2/hpack"
_ "golang.org/x/sys/unix"
_ "github.com/vishvananda/netlink"
_ "github.com/vishvananda/netns"
_ "gonum.org/v1/plot"
_ "github.com/schollz/progressbar/v3"
_ "gopkg.in/yaml.v3"
_ "github.com/quic-go/quic-go/http3"
)
