// Package channel holds the Hub's side of the brokers' control channels:
// the registry of each broker's current session (a reconnect replaces
// the old one, and only the current session's end marks a broker
// offline), and the dispatch of commands over them: waiting until the
// commands queued while a broker was offline are delivered, the typed
// answers of an offline or vanished broker, and the resend of a keyed
// command whose answer was lost with its channel.
//
// What a broker's messages mean (its hello, its reports, its inventory)
// and what is queued for it are the Hub's business: the endpoint that
// accepts a channel and the offline queue stay in hub, which builds a
// Dispatcher with what it needs of them (its metrics, the reach check
// before a resend). It imports only api, hub/plan (the classes of a
// dispatch error) and wire: it never reaches a record or the Server.
package channel
