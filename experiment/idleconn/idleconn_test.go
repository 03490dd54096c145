package idleconn

import "testing"

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
