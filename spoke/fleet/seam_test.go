package fleet

import "github.com/scion-go/scion/spoke/tunnel"

// The SSH tier's tunnel plugs into the bastion tier's seam.
var _ Dialer = (*tunnel.Tunnel)(nil)
