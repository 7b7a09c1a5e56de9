package config

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"
)

// BrokerConnection is a Runtime Broker's registration with one Hub. A
// broker may hold several (one per Hub it serves). A flat instance
// (server.broker.instances) has its own connection per Hub, under its
// key: each instance is its own broker ID with its own secret.
type BrokerConnection struct {
	// Name identifies the connection locally (default: the broker name).
	Name string `yaml:"name"`
	// Instance is the key of the flat instance this connection belongs
	// to; "" for the regular broker.
	Instance string `yaml:"instance,omitempty"`
	// RuntimeTarget is the target the instance registered serving (its
	// pinned agents' target): an instance whose entry or kubeconfig now
	// resolves to another one is refused at start rather than moved.
	RuntimeTarget *RuntimeTarget `yaml:"runtime_target,omitempty"`
	HubEndpoint   string         `yaml:"hub_endpoint"`
	BrokerID      string         `yaml:"broker_id"`
	BrokerName    string         `yaml:"broker_name"`
	Secret        string         `yaml:"secret"`
	// TransportMode and TransportAudience configure an OIDC token per
	// connection for Hubs behind IAP (spec field names).
	TransportMode     string `yaml:"transportMode,omitempty"`
	TransportAudience string `yaml:"transportAudience,omitempty"`
	// CAFile is the PEM file of the CA that signed the Hub's TLS
	// certificate ("": the system's roots); InsecureHTTP allows plain
	// http to a Hub that is not on loopback (refused otherwise).
	CAFile       string `yaml:"caFile,omitempty"`
	InsecureHTTP bool   `yaml:"insecureHTTP,omitempty"`
}

// BrokerCredentials is broker-credentials.yaml.
type BrokerCredentials struct {
	Connections []*BrokerConnection `yaml:"connections"`
}

// BrokerCredentialsPath is the broker credentials file.
func BrokerCredentialsPath() string { return Path("broker-credentials.yaml") }

// LoadBrokerCredentials reads the credentials; a missing file gives none.
func LoadBrokerCredentials() (*BrokerCredentials, error) {
	c := &BrokerCredentials{}
	b, err := os.ReadFile(BrokerCredentialsPath())
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(b, c); err != nil {
		return nil, fmt.Errorf("config: %s: %w", BrokerCredentialsPath(), err)
	}
	return c, nil
}

// Save writes the credentials (0600).
func (c *BrokerCredentials) Save() error {
	b, err := yaml.Marshal(c)
	if err != nil {
		return err
	}
	return WriteFileAtomic(BrokerCredentialsPath(), b, 0o600)
}

// SameHub reports whether two Hub endpoints are one (a trailing slash
// aside).
func SameHub(a, b string) bool { return strings.TrimRight(a, "/") == strings.TrimRight(b, "/") }

// ForHub returns the regular broker's connection for a Hub endpoint, or
// nil (an instance's connection is never it: see ForInstance).
func (c *BrokerCredentials) ForHub(endpoint string) *BrokerConnection {
	return c.ForInstance(endpoint, "")
}

// ForInstance returns the connection of the flat instance with key
// instance for a Hub endpoint ("" the regular broker's), or nil.
func (c *BrokerCredentials) ForInstance(endpoint, instance string) *BrokerConnection {
	for _, x := range c.Connections {
		if x.Instance == instance && SameHub(x.HubEndpoint, endpoint) {
			return x
		}
	}
	return nil
}

// Put adds or replaces the connection for conn.HubEndpoint and
// conn.Instance.
func (c *BrokerCredentials) Put(conn *BrokerConnection) {
	for i, x := range c.Connections {
		if x.Instance == conn.Instance && SameHub(x.HubEndpoint, conn.HubEndpoint) {
			c.Connections[i] = conn
			return
		}
	}
	c.Connections = append(c.Connections, conn)
}

// Remove drops the connection with the given broker ID.
func (c *BrokerCredentials) Remove(brokerID string) {
	out := c.Connections[:0]
	for _, x := range c.Connections {
		if x.BrokerID != brokerID {
			out = append(out, x)
		}
	}
	c.Connections = out
}

// Select picks the connection a command acts on: by name when given,
// else the only one. Several without a name is an error listing them.
func (c *BrokerCredentials) Select(name string) (*BrokerConnection, error) {
	if name != "" {
		for _, x := range c.Connections {
			if x.Name == name || x.BrokerName == name || x.BrokerID == name {
				return x, nil
			}
		}
		return nil, fmt.Errorf("no stored broker connection named %q", name)
	}
	switch len(c.Connections) {
	case 0:
		return nil, nil
	case 1:
		return c.Connections[0], nil
	}
	names := make([]string, len(c.Connections))
	for i, x := range c.Connections {
		names[i] = x.Name + " (" + x.HubEndpoint + ")"
	}
	return nil, fmt.Errorf("several broker connections are stored; choose one with --name: %s", strings.Join(names, ", "))
}
