package egress

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestParseHostPort(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"example.com:443", "example.com:443"},
		{"EXAMPLE.com:443", "example.com:443"},
		{"example.com.:80", "example.com:80"},
		{"93.184.215.14:80", "93.184.215.14:80"},
		{"[2001:DB8:0:0::1]:443", "[2001:db8::1]:443"},
		{"[::ffff:127.0.0.1]:80", "[::ffff:127.0.0.1]:80"},
		{"[::FFFF:7F00:1]:80", "[::ffff:127.0.0.1]:80"},
		{"2130706433:80", "2130706433:80"}, // kept as written: the host rule refuses it
		{"0x7f.1:80", "0x7f.1:80"},
		{"a:1", "a:1"},
		{"a:65535", "a:65535"},
	} {
		hp, err := ParseHostPort(tc.in)
		if err != nil || hp.String() != tc.want {
			t.Errorf("ParseHostPort(%q) = %q, %v; want %q", tc.in, hp, err, tc.want)
			continue
		}
		if again, err := ParseHostPort(hp.String()); err != nil || again != hp {
			t.Errorf("%q does not read back: %v", hp, err)
		}
	}
	for _, in := range []string{
		"", ":80", "example.com", "example.com:", "example.com:0", "example.com:65536", "example.com:080",
		"example.com:+80", "example.com:8 0", "::1:80", "[::1]", "[::1]x:80", "[::1:80", "::1]:80",
		"[127.0.0.1]:80", "[fe80::1%eth0]:80", "exa mple.com:80", "exa_mple.com:80", "ex..ample.com:80",
		".example.com:80", "example.com..:80", "é.example.com:80", "a/b:80", "user@host:80",
		strings.Repeat("a", 64) + ".com:80", strings.Repeat("a.", 127) + "aa:80",
	} {
		if hp, err := ParseHostPort(in); err == nil || !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseHostPort(%q) = %q, %v; want ErrMalformed", in, hp, err)
		} else if len(in) > 3 && strings.Contains(err.Error(), in) {
			t.Errorf("the error %q repeats the input", err)
		}
	}
	if hp, err := parseAuthority("example.com", 443); err != nil || hp.String() != "example.com:443" {
		t.Errorf("default port: %q %v", hp, err)
	}
	if hp, err := parseAuthority("[::1]", 80); err != nil || hp.String() != "[::1]:80" {
		t.Errorf("default port, IPv6: %q %v", hp, err)
	}
}

func TestHostPortText(t *testing.T) {
	var v struct{ D HostPort }
	if err := json.Unmarshal([]byte(`{"D":"Example.COM:443"}`), &v); err != nil || v.D.String() != "example.com:443" {
		t.Fatalf("%v %v", v, err)
	}
	b, _ := json.Marshal(v)
	if string(b) != `{"D":"example.com:443"}` {
		t.Errorf("%s", b)
	}
	if err := json.Unmarshal([]byte(`{"D":"x"}`), &v); err == nil {
		t.Error("a malformed destination unmarshalled")
	}
	var z HostPort
	if z.IsValid() || z.String() != "" || z.Host() != "" || z.Port() != 0 {
		t.Error("the zero HostPort")
	}
	if _, err := NewHostPort("example.com", 0); err == nil {
		t.Error("port 0")
	}
}

func TestParseProxyAuthorization(t *testing.T) {
	cred, _ := newToken(credPrefix)
	if got, ok := parseProxyAuthorization(ProxyAuthorization(cred)); !ok || got != cred {
		t.Fatalf("round trip: %q %v", got, ok)
	}
	if got, ok := parseProxyAuthorization("BASIC " + b64("capgate:"+cred)); !ok || got != cred {
		t.Errorf("scheme case: %q %v", got, ok)
	}
	handle, _ := newToken(handlePrefix)
	for _, v := range []string{
		"", "Basic", "Basic ", "Basic  " + b64("capgate:"+cred), "Bearer " + cred, "Basic " + cred,
		"Basic " + b64("capgat:"+cred), "Basic " + b64("capgate:"+handle), "Basic " + b64("capgate:"+cred[:len(cred)-1]+"!"),
		"Basic " + strings.TrimRight(b64("capgate:"+cred), "="), "Basic " + b64("capgate:"+cred) + " ",
		"Basic " + b64(":"+cred), "Basic " + b64("capgate:"+cred+"x"),
	} {
		if got, ok := parseProxyAuthorization(v); ok {
			t.Errorf("parseProxyAuthorization(%q) = %q", v, got)
		}
	}
}

func TestHeaderTemplate(t *testing.T) {
	for _, tc := range []struct{ in, name, prefix, suffix string }{
		{DefaultHeader, "Authorization", "Bearer ", ""},
		{"x-api-key:{secret}", "X-Api-Key", "", ""},
		{"PRIVATE-TOKEN: {secret}", "Private-Token", "", ""},
		{"Cookie: session={secret}; lang=en", "Cookie", "session=", "; lang=en"},
	} {
		n, p, s, err := parseHeaderTemplate(tc.in)
		if err != nil || n != tc.name || p != tc.prefix || s != tc.suffix {
			t.Errorf("%q: %q %q %q %v", tc.in, n, p, s, err)
		}
	}
	for _, in := range []string{
		"", "Authorization", ": {secret}", "Auth orization: {secret}", "Authorization: Bearer",
		"Authorization: {secret} {secret}", "Authorization: {secret}\r\nX-Other: 1", "Authorization: {secret} ",
		"Host: {secret}", "proxy-authorization: {secret}", "Capgate-Credential: {secret}", "Transfer-Encoding: {secret}",
		"Authorization: é{secret}", "e:{sec{secret}ret}", "X-Key: {{secret}}", "X-Key: {secret}}", "X-Key: {}{secret}",
	} {
		if _, _, _, err := parseHeaderTemplate(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestRedactor(t *testing.T) {
	secret := []byte("abcabd12")
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"no secret here", "no secret here"},
		{"abcabd12", "********"},
		{"xabcabd12y abcabd12", "x********y ********"},
		{"abcabcabd12abcabd1", "abc********abcabd1"},
		{"abcabd12abcabd12", "****************"},
	} {
		// Read in pieces of every size, so occurrences straddle reads.
		for _, chunk := range []int{1, 2, 3, 7, 100} {
			r := newRedactor(io.NopCloser(&chunked{b: []byte(tc.in), n: chunk}), secret)
			got, err := io.ReadAll(iotest.OneByteReader(r))
			if err != nil || string(got) != tc.want {
				t.Errorf("%q by %d: %q %v, want %q", tc.in, chunk, got, err, tc.want)
			}
		}
	}
	if m := maskByte([]byte("a*b#c~X")); m != ' ' {
		t.Errorf("maskByte = %q", m)
	}
	if got := maskString("Bearer abcabd12", secret, '*'); got != "Bearer ********" {
		t.Errorf("maskString: %q", got)
	}
}

// chunked reads b at most n bytes at a time.
type chunked struct {
	b []byte
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	k := min(len(p), c.n, len(c.b))
	copy(p, c.b[:k])
	c.b = c.b[k:]
	return k, nil
}

func FuzzParseHostPort(f *testing.F) {
	for _, s := range []string{"example.com:443", "[2001:db8::1]:443", "[::ffff:127.0.0.1]:80", "2130706433:80",
		"0x7f.1:80", "EXAMPLE.COM.:80", "[fe80::1%eth0]:80", "a:080", "::1:80", ""} {
		f.Add(s, 0)
		f.Add(s, 443)
	}
	f.Fuzz(func(t *testing.T, s string, defaultPort int) {
		if defaultPort < 0 || defaultPort > 65535 {
			defaultPort = 0
		}
		hp, err := parseAuthority(s, defaultPort)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("%q: error %v is not ErrMalformed", s, err)
			}
			if len(s) > 8 && strings.Contains(err.Error(), s) {
				t.Fatalf("the error repeats the input")
			}
			return
		}
		if !hp.IsValid() {
			t.Fatalf("%q: an invalid HostPort without an error", s)
		}
		// One spelling: what it prints reads back to itself, and prints the same.
		again, err := ParseHostPort(hp.String())
		if err != nil || again != hp || again.String() != hp.String() {
			t.Fatalf("%q -> %q does not read back: %q %v", s, hp, again, err)
		}
		h := hp.Host()
		if h != strings.ToLower(h) || strings.HasSuffix(h, ".") || strings.ContainsAny(h, "[]%/@ \t\r\n") {
			t.Fatalf("%q: host %q is not normalised", s, h)
		}
	})
}

func FuzzParseProxyAuthorization(f *testing.F) {
	cred, _ := newToken(credPrefix)
	f.Add(ProxyAuthorization(cred))
	f.Add("Basic " + b64("capgate:x"))
	f.Add("Bearer x")
	f.Add("")
	f.Fuzz(func(t *testing.T, v string) {
		got, ok := parseProxyAuthorization(v)
		if !ok {
			return
		}
		if !wellFormedToken(got, credPrefix) {
			t.Fatalf("%q: accepted a malformed credential %q", v, got)
		}
		// The accepted form is the one ProxyAuthorization writes, bar the scheme's case.
		if want := ProxyAuthorization(got); !strings.EqualFold(v[:6], want[:6]) || v[6:] != want[6:] {
			t.Fatalf("%q accepted, but the canonical form is %q", v, want)
		}
	})
}

func FuzzHeaderTemplate(f *testing.F) {
	for _, s := range []string{DefaultHeader, "X-Api-Key: {secret}", "Cookie: a={secret}; b=c", "Host: {secret}", "a:{secret}{secret}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, prefix, suffix, err := parseHeaderTemplate(s)
		if err != nil {
			return
		}
		v := prefix + testSecret + suffix
		if reservedHeaders[name] || strings.ContainsAny(name+v, "\r\n\x00") || strings.Contains(prefix+suffix, secretPlaceholder) {
			t.Fatalf("%q: accepted %q: %q", s, name, v)
		}
	})
}

func FuzzRedactor(f *testing.F) {
	f.Add([]byte("xabcabd12y"), []byte("abcabd12"), 3)
	f.Add([]byte("aaaaaaaaaaaaaaaa"), []byte("aaaaaaaa"), 1)
	f.Fuzz(func(t *testing.T, in, secret []byte, chunk int) {
		if len(secret) < 2 || len(secret) > 64 || bytes.IndexByte(secret, '*') >= 0 || chunk < 1 || chunk > 64 {
			return
		}
		got, err := io.ReadAll(newRedactor(io.NopCloser(&chunked{b: append([]byte(nil), in...), n: chunk}), secret))
		if err != nil || len(got) != len(in) {
			t.Fatalf("length %d -> %d, %v", len(in), len(got), err)
		}
		if bytes.Contains(got, secret) {
			t.Fatalf("%q still holds %q: %q", in, secret, got)
		}
		for i := range got {
			if got[i] != in[i] && got[i] != '*' {
				t.Fatalf("byte %d changed to %q", i, got[i])
			}
		}
	})
}
