package bedrock

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Verifying a SigV4 signature for an access key id whose secret is
// configured (mock's Config.AWSSecretKeys, wire.Credentials.Secrets): the canonical request is rebuilt from
// the request as received, over exactly the headers the client says it
// signed, and signed with the configured secret; the signatures must be
// equal. The steps are AWS's published algorithm (Signature Version 4:
// canonical request, string to sign, the HMAC-SHA256 key chain
// date → region → service → aws4_request); docs/bedrock.md names the
// sources.

// verifySigV4 checks req's signature, whose Authorization header sigV4
// matched into m, with secret; it returns why it is refused, or "". It
// reads the body (at most maxBody+1 bytes) and puts back one that reads the
// same.
func verifySigV4(req *http.Request, m []string, secret string, maxBody int) (bad string) {
	body, err := io.ReadAll(io.LimitReader(req.Body, int64(maxBody)+1))
	req.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), req.Body))
	switch {
	case err != nil:
		return "The request signature could not be verified: reading the body: " + err.Error()
	case len(body) > maxBody:
		return "" // the core answers 413; the signature is not what is wrong
	}
	date, region, service, signed, sig := m[2], m[3], m[4], m[5], m[6]
	if want := sigV4Signature(req, body, secret, date, region, service, signed); !hmac.Equal([]byte(want), []byte(sig)) {
		return "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method."
	}
	return ""
}

// sigV4Signature is the signature of req and body with secret, over the
// headers named in signed (";"-separated, lowercase).
func sigV4Signature(req *http.Request, body []byte, secret, date, region, service, signed string) string {
	var cr strings.Builder
	cr.WriteString(req.Method)
	cr.WriteByte('\n')
	// Every service but S3 encodes the path's escaped form once more.
	path := req.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	cr.WriteString(uriEncode(path, false))
	cr.WriteByte('\n')
	cr.WriteString(canonicalQuery(req.URL.Query()))
	cr.WriteByte('\n')
	for _, name := range strings.Split(signed, ";") {
		var v string
		switch name {
		case "host":
			v = req.Host
		case "content-length":
			v = req.Header.Get("Content-Length")
			if v == "" && req.ContentLength >= 0 {
				v = strconv.FormatInt(req.ContentLength, 10)
			}
		default:
			v = strings.Join(req.Header.Values(name), ",")
		}
		cr.WriteString(name)
		cr.WriteByte(':')
		cr.WriteString(strings.Join(strings.Fields(v), " "))
		cr.WriteByte('\n')
	}
	cr.WriteByte('\n')
	cr.WriteString(signed)
	cr.WriteByte('\n')
	payload := req.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		sum := sha256.Sum256(body)
		payload = hex.EncodeToString(sum[:])
	}
	cr.WriteString(payload)

	crSum := sha256.Sum256([]byte(cr.String()))
	scope := date + "/" + region + "/" + service + "/aws4_request"
	toSign := "AWS4-HMAC-SHA256\n" + req.Header.Get("X-Amz-Date") + "\n" + scope + "\n" + hex.EncodeToString(crSum[:])
	key := []byte("AWS4" + secret)
	for _, part := range []string{date, region, service, "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	return hex.EncodeToString(hmacSHA256(key, toSign))
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

// uriEncode percent-encodes every byte but the unreserved characters
// (A-Z a-z 0-9 - _ . ~), and "/" unless slash is set, in upper-case hex.
func uriEncode(s string, slash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' || c == '/' && !slash {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte("0123456789ABCDEF"[c>>4])
		b.WriteByte("0123456789ABCDEF"[c&15])
	}
	return b.String()
}

// canonicalQuery is the query sorted by name, then value, each encoded.
func canonicalQuery(q url.Values) string {
	var parts []string
	for k, vs := range q {
		for _, v := range vs {
			parts = append(parts, uriEncode(k, true)+"="+uriEncode(v, true))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, "&")
}
