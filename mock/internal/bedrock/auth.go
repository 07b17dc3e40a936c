package bedrock

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/ratelab/ratelab/mock/internal/wire"
)

// Bedrock Runtime's credentials (docs/bedrock.md: Authentication): an AWS
// Signature Version 4 Authorization header, or a Bedrock API key as a
// bearer token. The mock checks a signature's shape, not its HMAC: the
// mock has no secret keys, so the access key id in the credential scope is
// the key's identity, as the SDKs send it. Keys are configured as
// api_keys; an access key id is one.

// sigV4 matches the Authorization header of a SigV4 request:
// AWS4-HMAC-SHA256 Credential=AKID/YYYYMMDD/region/bedrock/aws4_request,
// SignedHeaders=h1;h2, Signature=64 hex digits. Go's SDK separates the
// parts with ", ", botocore with ", " too; the grammar allows "," alone.
var sigV4 = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/,\s]+)/(\d{8})/([a-z0-9-]+)/([a-z0-9-]+)/aws4_request,\s*SignedHeaders=([a-z0-9;-]+),\s*Signature=([0-9a-f]{64})$`)

// amzDate matches x-amz-date: YYYYMMDDTHHMMSSZ.
var amzDate = regexp.MustCompile(`^(\d{8})T\d{6}Z$`)

// Messages of the signature errors, whose prefixes errorOf maps to
// the exception types (all 403 but IncompleteSignatureException's 400).
const (
	msgMissingToken = "Missing Authentication Token"
	msgUnknownKey   = "The security token included in the request is invalid."
)

// authenticate is Spec.Authenticate: the key of a Bedrock request is the
// access key id of its SigV4 credential, or its bearer token. A malformed
// signature is refused even in open mode (no api_keys), since no SDK sends
// one; in open mode a request without credentials is served. A signature
// whose access key id has a secret in creds.Secrets is verified for real
// (sigv4.go).
func authenticate(req *http.Request, creds wire.Credentials) (key string, ok bool, why string) {
	keys := creds.Keys
	auth := req.Header.Get("Authorization")
	if token, isBearer := strings.CutPrefix(auth, "Bearer "); isBearer {
		if len(keys) == 0 || keys[token] {
			return token, true, ""
		}
		return "", false, msgUnknownKey + " (the bearer token is not a key of this server)"
	}
	if auth == "" {
		if len(keys) == 0 {
			return "", true, ""
		}
		return "", false, msgMissingToken + ": send an AWS SigV4 Authorization header or a Bedrock API key (Authorization: Bearer)."
	}
	m := sigV4.FindStringSubmatch(auth)
	if m == nil {
		return "", false, "Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' in the AWS4-HMAC-SHA256 form: AWS4-HMAC-SHA256 Credential=AKID/date/region/bedrock/aws4_request, SignedHeaders=…, Signature=…"
	}
	akid, date, service, signed := m[1], m[2], m[4], m[5]
	if service != "bedrock" {
		return "", false, "Credential should be scoped to correct service: 'bedrock', not '" + service + "'."
	}
	if !strings.Contains(";"+signed+";", ";host;") {
		return "", false, "SignedHeaders must include host."
	}
	d := amzDate.FindStringSubmatch(req.Header.Get("X-Amz-Date"))
	if d == nil {
		return "", false, "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header: x-amz-date is missing or not YYYYMMDDTHHMMSSZ."
	}
	if d[1] != date {
		return "", false, "Credential should be scoped to a valid date: the credential's " + date + " is not x-amz-date's " + d[1] + "."
	}
	if len(keys) > 0 && !keys[akid] {
		return "", false, msgUnknownKey + " (access key id " + akid + " is not a key of this server)"
	}
	if secret, ok := creds.Secrets[akid]; ok {
		if bad := verifySigV4(req, m, secret, creds.MaxBody); bad != "" {
			return "", false, bad
		}
	}
	return akid, true, ""
}

// attemptIndex is Spec.AttemptIndex: the attempt index (0 for the first) of an AWS SDK's
// request, from its amz-sdk-request header ("attempt=1; max=3", attempt
// 1-based), or -1 when absent or invalid: what Faults.Script counts
// attempts by.
func attemptIndex(req *http.Request) int {
	v := req.Header.Get("Amz-Sdk-Request")
	if v == "" {
		return -1
	}
	for _, part := range strings.Split(v, ";") {
		if n, ok := strings.CutPrefix(strings.TrimSpace(part), "attempt="); ok {
			if i, err := strconv.Atoi(n); err == nil && i >= 1 {
				return i - 1
			}
		}
	}
	return -1
}
