package cli_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strads-go/strads/cli"
	"github.com/strads-go/strads/internal/testhelper"
	"github.com/strads-go/strads/natsserver"
)

// startConfigured starts an embedded nats-server of the nats-server
// configuration text (a free port on 127.0.0.1 is added) and returns its
// port.
func startConfigured(t *testing.T, config string) int {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(path, []byte("listen: 127.0.0.1:-1\n"+config), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testhelper.StartServer(t, natsserver.Options{ConfigFile: path, ConfigAddr: true})
	return srv.Addr().(*net.TCPAddr).Port
}

// pki is a throwaway certificate authority and the files of a server's and
// a client's certificates signed by it, and of a CA that signed neither.
type pki struct {
	ca, otherCA               string
	serverCert, serverKey     string
	clientCert, clientKey     string
	strangerCert, strangerKey string // signed by otherCA
	caCert, otherCert         *x509.Certificate
	caKey, otherKey           *ecdsa.PrivateKey
	dir                       string
	serial                    int64
}

// newPKI writes the pki's files into a temporary directory.
func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir()}
	p.caCert, p.caKey, p.ca = p.authority(t, "test CA")
	p.otherCert, p.otherKey, p.otherCA = p.authority(t, "other CA")
	p.serverCert, p.serverKey = p.leaf(t, "server", p.caCert, p.caKey, x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = p.leaf(t, "client", p.caCert, p.caKey, x509.ExtKeyUsageClientAuth)
	p.strangerCert, p.strangerKey = p.leaf(t, "stranger", p.otherCert, p.otherKey, x509.ExtKeyUsageClientAuth)
	return p
}

// write writes a PEM block of typ to the file name and returns its path.
func (p *pki) write(t *testing.T, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// key makes a key and writes it.
func (p *pki) key(t *testing.T, name string) (*ecdsa.PrivateKey, string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return k, p.write(t, name+".key", "PRIVATE KEY", der)
}

// authority makes a self-signed CA and writes its certificate.
func (p *pki) authority(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey, string) {
	t.Helper()
	k, _ := p.key(t, name)
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, k, p.write(t, strings.ReplaceAll(name, " ", "-")+".pem", "CERTIFICATE", der)
}

// leaf makes a certificate for 127.0.0.1 signed by ca and writes it and its
// key.
func (p *pki) leaf(t *testing.T, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, usage x509.ExtKeyUsage) (cert, key string) {
	t.Helper()
	k, key := p.key(t, name)
	p.serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return p.write(t, name+".pem", "CERTIFICATE", der), key
}

// TestProtectedServer runs roles and whole jobs of the toy against servers
// that want a user and password, or TLS with client certificates: without
// them, or with wrong ones, a role is refused with an error that says what
// the server wants; with them, the job runs. The password never shows.
func TestProtectedServer(t *testing.T) {
	const password = "s3cr%3Ft-pw" // escaped "s3cr?t-pw"
	userPort := startConfigured(t, "authorization { user: strads, password: \"s3cr?t-pw\" }\n")
	p := newPKI(t)
	tlsPort := startConfigured(t, fmt.Sprintf("tls { cert_file: %q, key_file: %q, ca_file: %q, verify: true, timeout: 5 }\n",
		p.serverCert, p.serverKey, p.ca))
	user := func(userinfo string) string { return fmt.Sprintf("nats://%s127.0.0.1:%d", userinfo, userPort) }
	tlsURL := fmt.Sprintf("tls://127.0.0.1:%d", tlsPort)
	cl := &cli.CommandLine{Name: "toy", Apps: []cli.App{toyApp("toy")}}
	job := []string{"--workers", "1", "--max-rounds", "2", "--progress", "10ms", "--verbose", "--join-timeout", "5s", "--timeout", "5s"}
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // in stderr
	}{
		{"no password", []string{"worker", "--nats", user(""), "--job", "p1"}, 1, "the server refused this role's credentials"},
		{"wrong password", []string{"worker", "--nats", user("strads:wrong-" + password + "@"), "--job", "p2"}, 1, "Authorization Violation"},
		{"wrong password, whole job", append([]string{"--nats", user("strads:wrong-" + password + "@"), "--job", "p3"}, job...), 1, "the server refused"},
		{"password", append([]string{"--nats", user("strads:" + password + "@"), "--job", "p4", "--http", "127.0.0.1:0"}, job...), 0, "serving the live page on http://127.0.0.1:"},
		{"no client certificate", append([]string{"--nats", tlsURL, "--job", "t1", "--tls-ca", p.ca}, job...), 1, "--tls-cert"},
		{"untrusted server", append([]string{"--nats", tlsURL, "--job", "t2", "--tls-cert", p.clientCert, "--tls-key", p.clientKey}, job...), 1, "--tls-ca"},
		{"certificate of another CA", []string{"worker", "--nats", tlsURL, "--job", "t3", "--tls-ca", p.ca, "--tls-cert", p.strangerCert, "--tls-key", p.strangerKey}, 1, "--tls-cert"},
		{"client certificate", append([]string{"--nats", tlsURL, "--job", "t4", "--tls-ca", p.ca, "--tls-cert", p.clientCert, "--tls-key", p.clientKey}, job...), 0, ""},
		{"key without certificate", []string{"worker", "--nats", tlsURL, "--tls-key", p.clientKey}, 2, "--tls-cert and --tls-key go together"},
		{"missing creds file", []string{"worker", "--nats", tlsURL, "--creds", filepath.Join(p.dir, "none.creds")}, 2, "--creds"},
		{"creds without --nats", []string{"--creds", p.ca}, 2, "only with --nats"},
		{"nats-listen on a role", []string{"worker", "--nats", tlsURL, "--nats-listen", ":0"}, 2, "--nats-listen: only for a whole job"},
		{"pprof without http", []string{"--pprof"}, 2, "--pprof: only with --http"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, cl, tt.args...)
			t.Logf("stderr: %s", stderr)
			if code != tt.code || !strings.Contains(stderr, tt.stderr) {
				t.Fatalf("%q: exit %d, stderr %q; want exit %d, stderr with %q", tt.args, code, stderr, tt.code, tt.stderr)
			}
			for _, secret := range []string{password, "s3cr?t-pw"} {
				if strings.Contains(stderr+stdout, secret) {
					t.Errorf("the output shows the password %q:\n%s%s", secret, stdout, stderr)
				}
			}
			if code == 0 && !strings.Contains(stdout, "rounds 2") {
				t.Errorf("stdout %q: want a job of 2 rounds", stdout)
			}
		})
	}
}

// TestHTTP checks --http: a port alone is on the loopback interface, the
// profiles only with --pprof, and the serving line says what is served.
func TestHTTP(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		line  string // in stderr
		pprof bool
	}{
		{"port only", []string{"--http", ":0"}, "serving the live page on http://127.0.0.1:", false},
		{"pprof", []string{"--http", "127.0.0.1:0", "--pprof"}, "profiles on http://127.0.0.1:", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The command serves while the job runs: the toy's job, long
			// enough to be asked, over an embedded server.
			cl := &cli.CommandLine{Name: "toy", Apps: []cli.App{toyApp("toy")}}
			pr, pw := io.Pipe()
			done := make(chan int, 1)
			var out strings.Builder
			go func() {
				args := append([]string{"--workers", "1", "--max-rounds", "0", "--tol", "0", "--time-limit", "3s", "--progress", "0"}, tt.args...)
				code := cl.Run(t.Context(), args, &out, pw)
				pw.Close()
				done <- code
			}()
			buf := make([]byte, 4096)
			n, _ := pr.Read(buf)
			line := string(buf[:n])
			go io.Copy(io.Discard, pr)
			if !strings.Contains(line, tt.line) {
				t.Fatalf("serving line %q, want %q", line, tt.line)
			}
			addr := strings.Fields(line[strings.Index(line, "http://"):])[0]
			addr = strings.TrimSuffix(strings.TrimPrefix(addr, "http://"), "/")
			client := &http.Client{Timeout: 5 * time.Second}
			res, err := client.Get("http://" + addr + "/debug/pprof/cmdline")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if got := res.StatusCode == http.StatusOK; got != tt.pprof {
				t.Errorf("/debug/pprof/cmdline: status %d, want profiles %v", res.StatusCode, tt.pprof)
			}
			if code := <-done; code != 0 {
				t.Fatalf("exit %d, stdout %q", code, out.String())
			}
		})
	}
}
