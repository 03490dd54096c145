package proxy

import (
	"bufio"
	"io"
	"log"
	"net"
)

func bufioReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }

func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }
