#!/usr/bin/env bash
# postgres.sh [DIR] - make sure a PostgreSQL server for the tests runs on
# 127.0.0.1:${PGPORT:-5432} and print the line that points the tests at it:
#
#   eval "$(bash .ci/postgres.sh)"    # sets SCION_TEST_POSTGRES_URL
#
# Idempotent: if a server already answers on the port it only prints the URL;
# otherwise it installs PostgreSQL from Debian's packages when no server
# binary is found, initialises DIR/data (default DIR /tmp/scion-pg) with
# trust auth (it listens on loopback only) and starts it. fsync stays on: the
# store's durability tests should see the same commit path as production.
# Everything but the export line goes to stderr.
set -euo pipefail

DIR=${1:-/tmp/scion-pg}
PORT=${PGPORT:-5432}
HOST=127.0.0.1
URL="postgres://postgres@${HOST}:${PORT}/postgres?sslmode=disable"

log() { echo "postgres.sh: $*" >&2; }

# find_bindir prints the directory holding initdb, pg_ctl and postgres.
# Debian's versioned directories come first (highest version wins) because
# /usr/bin only has wrappers for the client tools, not the server.
find_bindir() {
	local d
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [[ -x $d/postgres && -x $d/initdb && -x $d/pg_ctl ]]; then
			echo "$d"
			return 0
		fi
	done
	local p
	if p=$(command -v postgres 2>/dev/null) && p=$(readlink -f "$p") &&
		[[ -x $(dirname "$p")/initdb && -x $(dirname "$p")/pg_ctl ]]; then
		dirname "$p"
		return 0
	fi
	return 1
}

# answers reports whether something accepts PostgreSQL connections on the
# port. A bare TCP probe would also succeed for an unrelated program, so ask
# pg_isready when we have it.
answers() {
	if [[ -n ${BIN:-} && -x $BIN/pg_isready ]]; then
		"$BIN/pg_isready" -q -h "$HOST" -p "$PORT" -t 2
	elif command -v pg_isready >/dev/null 2>&1; then
		pg_isready -q -h "$HOST" -p "$PORT" -t 2
	else
		(exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null
	fi
}

# as_pg runs a command as the postgres OS user when we are root (initdb and
# postgres refuse to run as root), else as ourselves.
as_pg() {
	if [[ $(id -u) -eq 0 ]]; then
		if command -v runuser >/dev/null 2>&1; then
			runuser -u postgres -- "$@"
		else
			su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
		fi
	else
		"$@"
	fi
}

print_url() {
	# Check the URL really lets us in (a distribution cluster with password
	# auth would answer pg_isready but fail every test).
	local psql=""
	if [[ -n ${BIN:-} && -x $BIN/psql ]]; then
		psql=$BIN/psql
	elif command -v psql >/dev/null 2>&1; then
		psql=psql
	fi
	if [[ -n $psql ]] && ! "$psql" "$URL" -qAtc 'select 1' >/dev/null 2>&1; then
		log "a server answers on $HOST:$PORT but rejects $URL (not trust auth for user postgres?)"
		exit 1
	fi
	echo "export SCION_TEST_POSTGRES_URL='$URL'"
}

BIN=$(find_bindir || true)

if answers; then
	log "server already answers on $HOST:$PORT"
	print_url
	exit 0
fi

if [[ -z $BIN ]]; then
	log "no PostgreSQL server binaries found; installing from Debian packages"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update >&2
	apt-get install -y postgresql >&2
	# The package may create and start its own cluster on 5432 with
	# password auth; stop it so ours can take the port.
	if command -v pg_lsclusters >/dev/null 2>&1; then
		pg_lsclusters -h 2>/dev/null | while read -r ver name port status _; do
			if [[ $status == online* ]]; then
				log "stopping distribution cluster $ver/$name on port $port"
				pg_ctlcluster "$ver" "$name" stop >&2 || true
			fi
		done
	fi
	BIN=$(find_bindir) || {
		log "PostgreSQL installed but no server binaries found"
		exit 1
	}
	if answers; then
		print_url
		exit 0
	fi
fi
log "using server binaries in $BIN"

if [[ $(id -u) -eq 0 ]] && ! id postgres >/dev/null 2>&1; then
	log "creating OS user postgres"
	useradd --system --home-dir "$DIR" --shell /bin/sh postgres
fi

DATA=$DIR/data
mkdir -p "$DIR"
if [[ $(id -u) -eq 0 ]]; then
	chown postgres: "$DIR"
fi

if [[ ! -s $DATA/PG_VERSION ]]; then
	log "initialising $DATA"
	rm -rf "$DATA"
	# Trust is safe only because the server listens on loopback (and a
	# socket in DIR); --no-locale gives byte-order text sorting.
	as_pg "$BIN/initdb" -D "$DATA" -U postgres --auth=trust --no-locale \
		--encoding=UTF8 >&2
fi

# A server killed with SIGKILL (as a session's processes are before CI runs)
# leaves postmaster.pid and the socket lock behind; its PID may since belong
# to another process, which makes postgres refuse to start. Nothing answers
# on the port (checked above), so if that PID is not a postgres process the
# lock files are stale: remove them.
if [[ -f $DATA/postmaster.pid ]]; then
	oldpid=$(head -n1 "$DATA/postmaster.pid" 2>/dev/null || true)
	if [[ -z $oldpid ]] || ! grep -qs postgres "/proc/$oldpid/comm"; then
		log "removing stale postmaster.pid (pid ${oldpid:-?} is not a running postgres)"
		rm -f "$DATA/postmaster.pid" "$DIR"/.s.PGSQL."$PORT".lock
	fi
fi

log "starting server on $HOST:$PORT"
# Tests create a database per test and several pools at once: allow more
# connections than the default 100.
as_pg "$BIN/pg_ctl" -D "$DATA" -l "$DIR/server.log" -w -t 60 \
	-o "-c listen_addresses=$HOST -p $PORT -k $DIR -c max_connections=300" \
	start >&2 || {
	log "pg_ctl start failed; server log follows"
	tail -n 50 "$DIR/server.log" >&2 || true
	exit 1
}

for _ in $(seq 1 60); do
	if answers; then
		print_url
		exit 0
	fi
	sleep 0.5
done
log "server did not accept connections; see $DIR/server.log"
exit 1
