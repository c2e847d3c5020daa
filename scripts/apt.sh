# Sourced by the scripts that need Debian packages: apt_install installs them
# when we are allowed to (root with apt-get), and otherwise says what is
# missing and fails.
apt_install() {
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "installing $*" >&2
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
	else
		echo "missing $*; install them (or, for PostgreSQL, set TEST_DATABASE_URL)" >&2
		exit 1
	fi
}
