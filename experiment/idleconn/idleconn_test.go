package idleconn

import (
	"os"
	"testing"
)

func TestVmRSS(t *testing.T) {
	got, err := vmRSS([]byte("Name:\tshunt\nVmPeak:\t  9000 kB\nVmRSS:\t    1234 kB\nRssAnon:\t 1000 kB\n"))
	if err != nil || got != 1234*1024 {
		t.Errorf("vmRSS = %d, %v; want %d", got, err, 1234*1024)
	}
	if _, err := vmRSS([]byte("Name:\tkthreadd\n")); err == nil {
		t.Error("no VmRSS line: no error")
	}
	// This process: at least its own RSS.
	if n, err := TreeRSS(os.Getpid()); err != nil || n < 1<<20 {
		t.Errorf("TreeRSS(self) = %d, %v", n, err)
	}
}

func TestValidate(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []func(*Config){
		func(c *Config) { c.Conns = 0 },
		func(c *Config) { c.Conns = maxConns + 1 },
		func(c *Config) { c.Workers = 0 },
		func(c *Config) { c.Settle = -1 },
	} {
		c := DefaultConfig()
		bad(&c)
		if c.Validate() == nil {
			t.Errorf("%+v validated", c)
		}
	}
}
