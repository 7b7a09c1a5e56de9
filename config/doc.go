// Package config reads and writes Scion's files under the Scion home
// (~/.scion, or $SCION_HOME):
//
//	settings.yaml            global settings (server.broker.hub_endpoint, ...;
//	                         server.broker.instances: flat Runtime Broker
//	                         instances, see instances.go)
//	hubs.yaml                the CLI's hub list and current hub
//	broker-credentials.yaml  a Runtime Broker's credentials, one entry per
//	                         Hub connection (a broker may serve several Hubs;
//	                         a flat instance has its own, under its key)
//	workstation.json         the local workstation Hub's URL and bootstrap
//	                         admin token, which the CLI picks up
//
// Files holding secrets are written 0600, atomically (temp file + rename).
package config
