package download

import "testing"

// TestSMigConfig checks what the SMig options turn into on each side.
func TestSMigConfig(t *testing.T) {
	ok := map[string]string{"proto": "h2", "smig": "migcp:2M", "notsent_lowat": "16384", "background": "complete", "priority": "i"}
	hp, err := Kind.Config(ok)
	if err != nil {
		t.Fatal(err)
	}
	if !hp.smigOn() || hp.clientPolicy().Threshold != 2<<20 || hp.serverExtras().SMig.Policy.ServerSide() || hp.NotSentLowat != 16384 || !hp.complete() || hp.Priority != "i" || hp.onDemand() {
		t.Errorf("params %v parsed as %+v", ok, hp)
	}
	ok["smig_pool"] = "ondemand"
	if hp, err := Kind.Config(ok); err != nil || !hp.onDemand() {
		t.Errorf("params %v parsed as %+v, %v", ok, hp, err)
	}
}
