package cli

// The -o json of commands whose answer is that something was done: the
// name or ID acted on and what was done, as a flag that is always true,
// so that a script reads the same keys from every run.

type revokedView struct {
	ID      string `json:"id"`
	Revoked bool   `json:"revoked"`
}

// secretDeletedView: Project for a project's (or the Hub's, "") secret,
// Broker for a broker's.
type secretDeletedView struct {
	Name    string `json:"name"`
	Project string `json:"project,omitempty"`
	Broker  string `json:"broker,omitempty"`
	Deleted bool   `json:"deleted"`
}

type deregisteredView struct {
	BrokerID     string `json:"brokerId"`
	BrokerName   string `json:"brokerName"`
	Hub          string `json:"hub"`
	Deregistered bool   `json:"deregistered"`
}
