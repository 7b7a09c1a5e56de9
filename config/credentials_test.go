package config

import "testing"

// A flat instance's connection is its own: the regular broker's lookup
// never returns it, Put keeps one per (Hub, instance), and both survive a
// save and a load.
func TestInstanceConnections(t *testing.T) {
	t.Setenv("SCION_HOME", t.TempDir())
	c := &BrokerCredentials{}
	c.Put(&BrokerConnection{Name: "host", HubEndpoint: "https://hub/", BrokerID: "b0", Secret: "s0"})
	c.Put(&BrokerConnection{Name: "docker", Instance: "local-docker", HubEndpoint: "https://hub", BrokerID: "b1", Secret: "s1"})
	c.Put(&BrokerConnection{Name: "k8s", Instance: "k8s-batch", HubEndpoint: "https://hub", BrokerID: "b2", Secret: "s2"})
	// Re-registering an instance replaces its own connection only.
	c.Put(&BrokerConnection{Name: "docker", Instance: "local-docker", HubEndpoint: "https://hub", BrokerID: "b3", Secret: "s3"})
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	c, err := LoadBrokerCredentials()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Connections) != 3 {
		t.Fatalf("connections = %d, want 3", len(c.Connections))
	}
	if x := c.ForHub("https://hub"); x == nil || x.BrokerID != "b0" {
		t.Errorf("regular broker's connection = %+v", x)
	}
	for key, id := range map[string]string{"local-docker": "b3", "k8s-batch": "b2"} {
		if x := c.ForInstance("https://hub/", key); x == nil || x.BrokerID != id || x.Instance != key {
			t.Errorf("instance %s: connection = %+v, want broker %s", key, x, id)
		}
	}
	if x := c.ForInstance("https://other", "k8s-batch"); x != nil {
		t.Errorf("another Hub's connection: %+v", x)
	}
	if x := c.ForInstance("https://hub", "gone"); x != nil {
		t.Errorf("an unknown instance: %+v", x)
	}
}
