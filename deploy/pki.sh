#!/usr/bin/env bash
# deploy/pki.sh: the farm's certificate authority, certificates and bearer tokens (Debian's openssl).
#
#   pki.sh init DIR [HOST...]            a CA (DIR/ca.pem, ca.key), the tracker's certificate
#                                        (DIR/tracker.pem, tracker.key; names: the HOSTs, the
#                                        machine's hostname, localhost, 127.0.0.1, ::1) and an
#                                        admin token (DIR/admin.token). Does nothing if DIR/ca.pem
#                                        exists. The tracker runs this itself on its first start.
#   pki.sh agent DIR AGENT_ID GRANT...   an agent's certificate, DIR/agents/AGENT_ID.{pem,key}: the
#                                        tracker lets it register as AGENT_ID and serve what each
#                                        GRANT, GLOB=KIND[:SLOTS], says: boards whose ids match GLOB,
#                                        registered as board kind KIND ("*": any kind), each asking
#                                        for at most SLOTS slots (default: the tracker's cap)
#   pki.sh user DIR NAME [--admin]       a user's client certificate, DIR/users/NAME.{pem,key}
#   pki.sh token DIR NAME [--admin] [--days N]
#                                        a new bearer token for user NAME, printed on stdout, good
#                                        for N days (default 365); the tracker keeps only its
#                                        SHA-256 and expiry (DIR/tokens: HASH ROLE NAME EXPIRES,
#                                        EXPIRES a UTC time like 2026-01-31T00:00:00Z; a line
#                                        without one never expires, as init's admin token)
#   pki.sh revoke-token DIR NAME         every token of NAME stops working (at once: the tracker
#                                        re-reads DIR/tokens when it changes)
#   pki.sh revoke-cert DIR CERT.pem      that certificate stops working (DIR/revoked: SHA-256
#                                        fingerprints; the tracker re-reads it when it changes)
#
# Certificates carry the role in the subject's OU (agent, user, admin) and the name in its CN; an
# agent's grants are URI names "urn:benchfarm:serve:KIND:SLOTS:GLOB" (SLOTS 0: no cap of its own).
# Keys are P-256, certificates last 825 days (the CA 10 years). Keys and tokens are written mode
# 0600.
set -euo pipefail

die() { echo "pki.sh: $*" >&2; exit 2; }
usage() { sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
command -v openssl >/dev/null || die "openssl is missing (apt install openssl)"

[[ $# -ge 2 ]] || usage
cmd="$1" dir="$2"
shift 2
umask 077

name_ok() { [[ "$1" =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$ ]] || die "'$1' is not a name (letters, digits, . _ -; at most 64)"; }
need_ca() { [[ -f "$dir/ca.pem" && -f "$dir/ca.key" ]] || die "no CA in $dir (run: pki.sh init $dir)"; }

# leaf OUT_BASE OU CN EXTENSIONS...: a key and a certificate signed by the CA.
leaf() {
  local out="$1" ou="$2" cn="$3" ext
  shift 3
  ext="$(mktemp "$dir/.ext.XXXXXX")"
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" "$@" >"$ext"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$out.key.tmp" \
    -subj "/O=benchfarm/OU=$ou/CN=$cn" -out "$out.csr" 2>/dev/null
  openssl x509 -req -in "$out.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 825 -sha256 -extfile "$ext" -out "$out.pem.tmp" 2>/dev/null
  rm -f "$out.csr" "$ext"
  chmod 0644 "$out.pem.tmp"
  mv -f "$out.key.tmp" "$out.key"
  mv -f "$out.pem.tmp" "$out.pem"
}

new_token() {  # new_token ROLE NAME [EXPIRES]: prints the token, appends its hash (and expiry)
  local token hash
  token="bf_$(openssl rand -hex 24)"
  hash="$(printf '%s' "$token" | openssl dgst -sha256 -r | cut -d' ' -f1)"
  touch "$dir/tokens"
  printf '%s %s %s%s\n' "$hash" "$1" "$2" "${3:+ $3}" >>"$dir/tokens"
  echo "$token"
}

case "$cmd" in
  init)
    mkdir -p "$dir"
    if [[ -f "$dir/ca.pem" ]]; then exit 0; fi
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -keyout "$dir/ca.key" -out "$dir/ca.pem.tmp" -days 3650 -sha256 -subj "/O=benchfarm/CN=benchfarm farm CA" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    chmod 0644 "$dir/ca.pem.tmp"
    mv -f "$dir/ca.pem.tmp" "$dir/ca.pem"
    sans="DNS:localhost,IP:127.0.0.1,IP:::1,DNS:$(hostname)"
    for host in "$@"; do
      if [[ "$host" =~ ^[0-9.]+$ || "$host" == *:* ]]; then sans+=",IP:$host"; else sans+=",DNS:$host"; fi
    done
    leaf "$dir/tracker" tracker tracker "subjectAltName=$sans" "extendedKeyUsage=serverAuth"
    touch "$dir/tokens" "$dir/revoked"
    new_token admin admin >"$dir/admin.token"
    echo "pki.sh: CA, tracker certificate and admin token in $dir" >&2
    ;;
  agent)
    [[ $# -ge 1 ]] || usage
    need_ca
    id="$1"; shift
    name_ok "$id"
    [[ $# -gt 0 ]] || die "name what agent $id may serve: GLOB=KIND[:SLOTS], e.g. 'nucleo-*=stm32f4:32'"
    san="subjectAltName="
    for grant in "$@"; do
      [[ "$grant" =~ ^([A-Za-z0-9._*?-]{1,64})=([A-Za-z0-9._-]{1,64}|\*)(:([0-9]{1,6}))?$ ]] ||
        die "grant '$grant': GLOB=KIND[:SLOTS] (GLOB: letters, digits, . _ - * ?; KIND: a board kind or *; SLOTS: a number)"
      san+="URI:urn:benchfarm:serve:${BASH_REMATCH[2]}:${BASH_REMATCH[4]:-0}:${BASH_REMATCH[1]},"
    done
    mkdir -p "$dir/agents"
    leaf "$dir/agents/$id" agent "$id" "${san%,}" "extendedKeyUsage=clientAuth"
    echo "$dir/agents/$id.pem"
    ;;
  user)
    [[ $# -ge 1 ]] || usage
    need_ca
    role=user
    [[ "${2:-}" == "--admin" ]] && role=admin
    name_ok "$1"
    mkdir -p "$dir/users"
    leaf "$dir/users/$1" "$role" "$1" "extendedKeyUsage=clientAuth"
    echo "$dir/users/$1.pem"
    ;;
  token)
    [[ $# -ge 1 ]] || usage
    name="$1" role=user days=365
    shift
    while [[ $# -gt 0 ]]; do
      case "$1" in
        --admin) role=admin ;;
        --days)
          [[ "${2:-}" =~ ^[1-9][0-9]{0,4}$ ]] || die "--days: a whole number of days from 1 to 99999, not '${2:-}'"
          days="$2"; shift ;;
        *) usage ;;
      esac
      shift
    done
    name_ok "$name"
    mkdir -p "$dir"
    new_token "$role" "$name" "$(date -u -d "+$days days" +%Y-%m-%dT%H:%M:%SZ)"
    ;;
  revoke-token)
    [[ $# -eq 1 ]] || usage
    [[ -f "$dir/tokens" ]] || die "no $dir/tokens"
    awk -v name="$1" '$3 != name' "$dir/tokens" >"$dir/tokens.tmp"
    mv -f "$dir/tokens.tmp" "$dir/tokens"
    ;;
  revoke-cert)
    [[ $# -eq 1 && -f "$1" ]] || usage
    # The certificate's SHA-256 fingerprint (of its DER form), as the tracker computes it.
    openssl x509 -in "$1" -noout -fingerprint -sha256 | sed 's/.*=//; s/://g' | tr 'A-F' 'a-f' >>"$dir/revoked"
    ;;
  *) usage ;;
esac
