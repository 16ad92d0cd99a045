package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	authv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	"sigs.k8s.io/yaml"

	"github.com/apta/scheduler-plugin/apis/config"
)

const manifests = "../../manifests/apta"

// patternsDir holds the workflow patterns, every layer's instance of each (workloads/patterns/).
const patternsDir = "../../../workloads/patterns"

// cluster is etcd + kube-apiserver, with the manifests applied and nodes created.
type cluster struct {
	admin   kubernetes.Interface
	restCfg *rest.Config
	dir     string
	nodes   []string // n1..nN, compute server sN
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startEtcd(t *testing.T) string {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", freePort(t)))
	pu, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", freePort(t)))
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	cfg.LogLevel = "error"
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("starting etcd: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		t.Fatal("etcd not ready after 60s")
	}
	return cu.String()
}

func startCluster(t *testing.T, nNodes int) *cluster {
	t.Helper()
	var nodes [][2]string
	for i := 1; i <= nNodes; i++ {
		nodes = append(nodes, [2]string{fmt.Sprintf("n%d", i), fmt.Sprintf("s%d", i)})
	}
	return startClusterNodes(t, nodes)
}

// startClusterNodes starts the control plane with one Node per {node name, compute server}.
func startClusterNodes(t *testing.T, nodes [][2]string) *cluster {
	t.Helper()
	start := time.Now()
	etcdURL := startEtcd(t)
	sc := storagebackend.NewDefaultConfig("/apta-e2e", nil)
	sc.Transport.ServerList = []string{etcdURL}
	ts, err := kubeapiservertesting.StartTestServer(t, kubeapiservertesting.NewDefaultTestServerOptions(), []string{
		"--authorization-mode=Node,RBAC",
		"--disable-admission-plugins=TaintNodesByCondition",
	}, sc)
	if err != nil {
		t.Fatalf("starting kube-apiserver: %v", err)
	}
	t.Cleanup(ts.TearDownFn)
	cfg := rest.CopyConfig(ts.ClientConfig)
	cfg.QPS, cfg.Burst = 500, 1000
	c := &cluster{admin: kubernetes.NewForConfigOrDie(cfg), restCfg: cfg, dir: t.TempDir()}
	if d := os.Getenv("APTA_E2E_DIR"); d != "" { // logs kept for the driver (tests/test_sched_daemon.py)
		c.dir = d
	}
	t.Logf("control plane (etcd %s, kube-apiserver %s) up in %v", etcdURL, cfg.Host, time.Since(start).Round(time.Millisecond))
	c.apply(t)
	ctx := context.Background()
	for _, ns := range nodes {
		name := ns[0]
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			config.DefaultNodeLabel: ns[1], "kubernetes.io/hostname": name}}}
		n, err := c.admin.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse("64"), v1.ResourceMemory: resource.MustParse("256Gi"), v1.ResourcePods: resource.MustParse("500")}
		n.Status = v1.NodeStatus{Capacity: rl, Allocatable: rl, Phase: v1.NodeRunning,
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "E2E", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}}
		if _, err := c.admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, name)
	}
	return c
}

// apply creates every object of the manifests except Deployments and Services (no kubelets).
func (c *cluster) apply(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, f := range []string{"rbac.yaml", "scheduler-config.yaml", "admission-policy.yaml", "secret.yaml", "networkpolicy.yaml"} {
		b, err := os.ReadFile(filepath.Join(manifests, f))
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(b)), 4096)
		for {
			var raw runtime.RawExtension
			if err := dec.Decode(&raw); err != nil {
				break
			}
			if len(raw.Raw) == 0 {
				continue
			}
			obj, _, err := serializer.NewCodecFactory(scheme.Scheme).UniversalDeserializer().Decode(raw.Raw, nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if err := create(ctx, c.admin, obj); err != nil {
				t.Fatalf("%s: creating %T: %v", f, obj, err)
			}
		}
	}
}

func create(ctx context.Context, k kubernetes.Interface, obj runtime.Object) error {
	var err error
	switch o := obj.(type) {
	case *v1.ServiceAccount:
		_, err = k.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *v1.ConfigMap:
		_, err = k.CoreV1().ConfigMaps(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *v1.Secret:
		_, err = k.CoreV1().Secrets(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	case *networkingv1.NetworkPolicy:
		_, err = k.NetworkingV1().NetworkPolicies(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
	default:
		err = createRBACOrPolicy(ctx, k, obj)
	}
	return err
}

// token of ServiceAccount sa in namespace ns, by the TokenRequest API (valid for an hour).
func (c *cluster) token(t *testing.T, ns, sa string) string {
	t.Helper()
	exp := int64(3600)
	tr, err := c.admin.CoreV1().ServiceAccounts(ns).CreateToken(context.Background(), sa,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s/%s: %v", ns, sa, err)
	}
	return tr.Status.Token
}

// caData is the apiserver's serving CA (PEM).
func (c *cluster) caData(t *testing.T) []byte {
	t.Helper()
	ca := c.restCfg.TLSClientConfig.CAData
	if len(ca) == 0 && c.restCfg.TLSClientConfig.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(c.restCfg.TLSClientConfig.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	return ca
}

// kubeconfig returns a kubeconfig for a ServiceAccount of kube-system.
func (c *cluster) kubeconfig(t *testing.T, sa string) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	// The loopback certificate is served for the name in ServerName (SNI), not for 127.0.0.1.
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: c.restCfg.Host, CertificateAuthorityData: c.caData(t), TLSServerName: c.restCfg.TLSClientConfig.ServerName}
	kc.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: c.token(t, "kube-system", sa)}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: sa}
	kc.CurrentContext = "e2e"
	path := filepath.Join(c.dir, sa+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func (c *cluster) clientFor(t *testing.T, sa string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig(t, sa))
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 200, 400
	return kubernetes.NewForConfigOrDie(cfg)
}

// schedulerConfig takes the configuration from the manifests' ConfigMap and adapts it to
// this run: the ServiceAccount kubeconfig, this run's control plane, no leader election
// (each run starts a fresh scheduler), and, for the negative control, no Apta plugin.
func (c *cluster) schedulerConfig(t *testing.T, kubeconfig, endpoint, tokenFile, caFile string, plugin bool) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(manifests, "scheduler-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm v1.ConfigMap
	if err := yaml.Unmarshal(b, &cm); err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(cm.Data["scheduler-config.yaml"]), &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["clientConnection"] = map[string]any{"kubeconfig": kubeconfig, "qps": 200, "burst": 400}
	cfg["leaderElection"] = map[string]any{"leaderElect": false}
	prof := cfg["profiles"].([]any)[0].(map[string]any)
	if plugin {
		pc := prof["pluginConfig"].([]any)[0].(map[string]any)
		args := pc["args"].(map[string]any)
		args["endpoint"] = endpoint
		// the manifests' token path (a mounted Secret) becomes this run's file; "": no token
		if _, ok := args["tokenFile"]; !ok {
			t.Fatal("the manifests' plugin args set no tokenFile")
		}
		delete(args, "tokenFile")
		if tokenFile != "" {
			args["tokenFile"] = tokenFile
		}
		if caFile != "" {
			args["caFile"] = caFile
		}
	} else {
		delete(prof, "plugins")
		delete(prof, "pluginConfig")
	}
	out, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(c.dir, fmt.Sprintf("scheduler-config-%v.yaml", plugin))
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startScheduler runs this test binary as kube-scheduler; it is stopped at cleanup, even on
// failure, or earlier by the function returned.
func (c *cluster) startScheduler(t *testing.T, configPath string) (stop func()) {
	t.Helper()
	port := freePort(t)
	args := []string{"--config=" + configPath, "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port), "--v=2"}
	logPath := filepath.Join(c.dir, fmt.Sprintf("scheduler-%d.log", port))
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), roleEnv+"=scheduler", argsEnv+"="+strings.Join(args, "\n"))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
			logf.Close()
			if t.Failed() {
				b, _ := os.ReadFile(logPath)
				if len(b) > 6000 {
					b = b[len(b)-6000:]
				}
				t.Logf("scheduler log tail (%s):\n%s", logPath, b)
			}
		})
	}
	t.Cleanup(stop)
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-done:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("scheduler exited at start:\n%s", b)
		default:
		}
		resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d/readyz", port))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return stop
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("scheduler not ready after 60s:\n%s", b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
