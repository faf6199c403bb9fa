// kube-validate reads the YAML stream `onrush kube render` writes (a file, or stdin) and checks
// every object the way the API server would start to: it decodes each document STRICTLY into
// the Kubernetes API's own Go types (k8s.io/api; an unknown or duplicated field is an error, a
// quantity or a type that does not parse is an error), validates object metadata, names and
// labels with k8s.io/apimachinery's validation, and checks the invariants a run depends on that
// the API types alone do not hold (every volume mounted exists, every ConfigMap and Secret a pod
// refers to is in the stream, the Service selects the controller's pod, each agent pod's host
// name fits a DNS label, ...). k8s.io/kubernetes's own validation (pkg/apis/core/validation) is
// not importable as a module; what it would check and this program does is listed in check().
//
// It prints "ok: N objects (kinds)" and exits 0, or prints every problem and exits 1.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// The API server's limit on a ConfigMap's or Secret's data (corev1 validation's MaxSecretSize).
const maxDataSize = 1024 * 1024

type objects struct {
	secrets    map[string]*corev1.Secret
	configMaps map[string]*corev1.ConfigMap
	services   []*corev1.Service
	jobs       []*batchv1.Job
	kinds      []string
}

func main() {
	var in io.Reader = os.Stdin
	args := os.Args[1:]
	// --mount DIR: also write the files the controller's projected volume would show (each
	// key of each ConfigMap it lists), as the kubelet does, for `onrush kube unpack` to read.
	mount := ""
	if len(args) > 1 && args[0] == "--mount" {
		mount, args = args[1], args[2:]
	}
	if len(args) > 0 && args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			fmt.Fprintln(os.Stderr, "kube-validate:", err)
			os.Exit(2)
		}
		defer f.Close()
		in = f
	}
	objs, errs := decode(in)
	errs = append(errs, check(objs)...)
	if len(errs) > 0 {
		for _, e := range errs {
			fmt.Println("error:", e)
		}
		os.Exit(1)
	}
	if mount != "" {
		if err := mountBundle(objs, mount); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
	}
	counts := map[string]int{}
	for _, k := range objs.kinds {
		counts[k]++
	}
	var parts []string
	for k, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(parts)
	fmt.Printf("ok: %d objects (%s)\n", len(objs.kinds), strings.Join(parts, ", "))
}

// decode reads every YAML document strictly into its API type.
func decode(in io.Reader) (*objects, []string) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := batchv1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	strict := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme,
		json.SerializerOptions{Yaml: true, Strict: true})
	objs := &objects{secrets: map[string]*corev1.Secret{}, configMaps: map[string]*corev1.ConfigMap{}}
	var errs []string
	reader := utilyaml.NewYAMLReader(bufio.NewReaderSize(in, 1<<20))
	for n := 1; ; n++ {
		doc, err := reader.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return objs, append(errs, fmt.Sprintf("document %d: %v", n, err))
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			n--
			continue
		}
		obj, gvk, err := strict.Decode(doc, nil, nil)
		if err != nil {
			errs = append(errs, fmt.Sprintf("document %d: %v", n, err))
			continue
		}
		objs.kinds = append(objs.kinds, gvk.Kind)
		switch o := obj.(type) {
		case *corev1.Secret:
			objs.secrets[o.Name] = o
		case *corev1.ConfigMap:
			objs.configMaps[o.Name] = o
		case *corev1.Service:
			objs.services = append(objs.services, o)
		case *batchv1.Job:
			objs.jobs = append(objs.jobs, o)
		default:
			errs = append(errs, fmt.Sprintf("document %d: unexpected kind %s", n, gvk))
		}
	}
	return objs, errs
}

func stripComments(doc []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}

func list(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func check(o *objects) []string {
	var errs []string
	runIDs := map[string]bool{}
	meta := func(kind string, m *metav1.ObjectMeta, nameFn apivalidation.ValidateNameFunc) {
		p := field.NewPath(kind + " " + m.Name).Child("metadata")
		if m.Namespace == "" {
			// Without one, kubectl applies into the context's namespace.
			m.Namespace = "default"
		}
		errs = append(errs, list(apivalidation.ValidateObjectMeta(m, true, nameFn, p))...)
		errs = append(errs, list(metavalidation.ValidateLabels(m.Labels, p.Child("labels")))...)
		id := m.Labels["onrush/run-id"]
		runIDs[id] = true
		if id == "" || !strings.Contains(m.Name, "-"+id+"-") {
			errs = append(errs, fmt.Sprintf("%s %s: the name does not hold the run id %q", kind, m.Name, id))
		}
		if m.Labels["app.kubernetes.io/name"] != "onrush" {
			errs = append(errs, fmt.Sprintf("%s %s: no app.kubernetes.io/name label", kind, m.Name))
		}
	}
	for _, s := range o.secrets {
		meta("Secret", &s.ObjectMeta, apivalidation.NameIsDNSSubdomain)
		size := 0
		for k, v := range s.StringData {
			size += len(v)
			for _, msg := range validation.IsConfigMapKey(k) {
				errs = append(errs, fmt.Sprintf("Secret %s: key %q: %s", s.Name, k, msg))
			}
		}
		if size > maxDataSize {
			errs = append(errs, fmt.Sprintf("Secret %s: %d bytes, over the API's 1 MiB", s.Name, size))
		}
	}
	for _, c := range o.configMaps {
		meta("ConfigMap", &c.ObjectMeta, apivalidation.NameIsDNSSubdomain)
		size := 0
		for k, v := range c.Data {
			size += len(v)
			for _, msg := range validation.IsConfigMapKey(k) {
				errs = append(errs, fmt.Sprintf("ConfigMap %s: key %q: %s", c.Name, k, msg))
			}
		}
		for k, v := range c.BinaryData {
			size += len(v)
			if _, dup := c.Data[k]; dup {
				errs = append(errs, fmt.Sprintf("ConfigMap %s: key %q in data and binaryData", c.Name, k))
			}
			for _, msg := range validation.IsConfigMapKey(k) {
				errs = append(errs, fmt.Sprintf("ConfigMap %s: key %q: %s", c.Name, k, msg))
			}
		}
		if size > maxDataSize {
			errs = append(errs, fmt.Sprintf("ConfigMap %s: %d bytes, over the API's 1 MiB", c.Name, size))
		}
	}
	for _, s := range o.services {
		meta("Service", &s.ObjectMeta, apivalidation.NameIsDNS1035Label)
		if len(s.Spec.Selector) == 0 {
			errs = append(errs, fmt.Sprintf("Service %s: no selector", s.Name))
		}
		selects := 0
		for _, j := range o.jobs {
			if labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(j.Spec.Template.Labels)) {
				selects++
				for _, p := range s.Spec.Ports {
					if !podListens(&j.Spec.Template.Spec, p.TargetPort.IntValue()) {
						errs = append(errs, fmt.Sprintf("Service %s: port %d: no container of Job %s listens on it", s.Name, p.Port, j.Name))
					}
				}
			}
		}
		if selects != 1 {
			errs = append(errs, fmt.Sprintf("Service %s: selects the pods of %d Jobs, not exactly one", s.Name, selects))
		}
		for _, p := range s.Spec.Ports {
			for _, msg := range validation.IsValidPortNum(int(p.Port)) {
				errs = append(errs, fmt.Sprintf("Service %s: port %d: %s", s.Name, p.Port, msg))
			}
		}
	}
	for _, j := range o.jobs {
		meta("Job", &j.ObjectMeta, apivalidation.NameIsDNSSubdomain)
		// The Job controller labels its pods with the Job's name: a label value, at most 63.
		for _, msg := range validation.IsValidLabelValue(j.Name) {
			errs = append(errs, fmt.Sprintf("Job %s: its name as the job-name label: %s", j.Name, msg))
		}
		spec := &j.Spec
		if spec.CompletionMode != nil && *spec.CompletionMode == batchv1.IndexedCompletion {
			if spec.Completions == nil || *spec.Completions < 1 {
				errs = append(errs, fmt.Sprintf("Job %s: Indexed without completions", j.Name))
			} else {
				// An indexed pod's host name is <job>-<index>: a DNS label.
				host := j.Name + "-" + strconv.Itoa(int(*spec.Completions)-1)
				for _, msg := range validation.IsDNS1123Label(host) {
					errs = append(errs, fmt.Sprintf("Job %s: pod host name %q: %s", j.Name, host, msg))
				}
			}
		}
		tp := field.NewPath("Job "+j.Name).Child("spec", "template", "metadata", "labels")
		errs = append(errs, list(metavalidation.ValidateLabels(spec.Template.Labels, tp))...)
		errs = append(errs, checkPod(o, j, &spec.Template)...)
	}
	if len(runIDs) != 1 {
		errs = append(errs, fmt.Sprintf("objects of %d run ids in one render", len(runIDs)))
	}
	return errs
}

func podListens(p *corev1.PodSpec, port int) bool {
	for _, c := range p.Containers {
		for _, cp := range c.Ports {
			if int(cp.ContainerPort) == port {
				return true
			}
		}
	}
	return false
}

func checkPod(o *objects, j *batchv1.Job, t *corev1.PodTemplateSpec) []string {
	var errs []string
	p := &t.Spec
	where := "Job " + j.Name
	bad := func(format string, a ...any) {
		errs = append(errs, where+": "+fmt.Sprintf(format, a...))
	}
	if p.RestartPolicy != corev1.RestartPolicyNever && p.RestartPolicy != corev1.RestartPolicyOnFailure {
		bad("restartPolicy %q: a Job's pods must be Never or OnFailure", p.RestartPolicy)
	}
	volumes := map[string]*corev1.Volume{}
	for i := range p.Volumes {
		v := &p.Volumes[i]
		for _, msg := range validation.IsDNS1123Label(v.Name) {
			bad("volume %q: %s", v.Name, msg)
		}
		if volumes[v.Name] != nil {
			bad("volume %q twice", v.Name)
		}
		volumes[v.Name] = v
		sources := 0
		if v.ConfigMap != nil {
			sources++
			if o.configMaps[v.ConfigMap.Name] == nil {
				bad("volume %q: ConfigMap %s is not rendered", v.Name, v.ConfigMap.Name)
			}
		}
		if v.Secret != nil {
			sources++
			s := o.secrets[v.Secret.SecretName]
			if s == nil {
				bad("volume %q: Secret %s is not rendered", v.Name, v.Secret.SecretName)
			} else {
				for _, it := range v.Secret.Items {
					if _, ok := s.StringData[it.Key]; !ok {
						if _, ok := s.Data[it.Key]; !ok {
							bad("volume %q: Secret %s has no key %q", v.Name, s.Name, it.Key)
						}
					}
				}
			}
		}
		if v.Projected != nil {
			sources++
			seen := map[string]string{}
			for _, src := range v.Projected.Sources {
				if src.ConfigMap == nil {
					continue
				}
				cm := o.configMaps[src.ConfigMap.Name]
				if cm == nil {
					bad("volume %q: ConfigMap %s is not rendered", v.Name, src.ConfigMap.Name)
					continue
				}
				keys := []string{}
				for k := range cm.Data {
					keys = append(keys, k)
				}
				for k := range cm.BinaryData {
					keys = append(keys, k)
				}
				for _, k := range keys {
					if other, dup := seen[k]; dup {
						bad("volume %q: key %q of ConfigMaps %s and %s would be one file", v.Name, k, other, cm.Name)
					}
					seen[k] = cm.Name
				}
			}
		}
		if v.EmptyDir != nil {
			sources++
		}
		if v.PersistentVolumeClaim != nil {
			sources++
			for _, msg := range validation.IsDNS1123Subdomain(v.PersistentVolumeClaim.ClaimName) {
				bad("volume %q: claim name: %s", v.Name, msg)
			}
		}
		if sources != 1 {
			bad("volume %q has %d sources, not one", v.Name, sources)
		}
	}
	used := map[string]bool{}
	containers := append(append([]corev1.Container{}, p.InitContainers...), p.Containers...)
	if len(p.Containers) == 0 {
		bad("no containers")
	}
	names := map[string]bool{}
	for _, c := range containers {
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			bad("container %q: %s", c.Name, msg)
		}
		if names[c.Name] {
			bad("container %q twice", c.Name)
		}
		names[c.Name] = true
		if c.Image == "" {
			bad("container %q: no image", c.Name)
		}
		mountPaths := map[string]bool{}
		for _, m := range c.VolumeMounts {
			if volumes[m.Name] == nil {
				bad("container %q mounts volume %q, which the pod does not have", c.Name, m.Name)
			}
			used[m.Name] = true
			if !strings.HasPrefix(m.MountPath, "/") || mountPaths[m.MountPath] {
				bad("container %q: mount path %q not absolute or used twice", c.Name, m.MountPath)
			}
			mountPaths[m.MountPath] = true
		}
		for _, e := range c.Env {
			for _, msg := range validation.IsEnvVarName(e.Name) {
				bad("container %q: env %q: %s", c.Name, e.Name, msg)
			}
		}
		// $(VAR) in args expands only for variables the container defines.
		for _, a := range c.Args {
			for _, ref := range varRefs(a) {
				found := false
				for _, e := range c.Env {
					found = found || e.Name == ref
				}
				if !found {
					bad("container %q: argument %q refers to $(%s), which is not in its env", c.Name, a, ref)
				}
			}
			// Files the arguments name under a mount must be in what is mounted there.
			if strings.HasPrefix(a, "/token/") {
				if !secretItem(c, volumes, strings.TrimPrefix(a, "/token/")) {
					bad("container %q: argument %q names a file its token volume does not hold", c.Name, a)
				}
			}
		}
		for _, port := range c.Ports {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				bad("container %q: port %d: %s", c.Name, port.ContainerPort, msg)
			}
		}
		errs = append(errs, checkResources(where, c)...)
		if sc := c.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
			sc.RunAsUser == nil || *sc.RunAsUser == 0 {
			bad("container %q may run as root", c.Name)
		}
	}
	for name := range volumes {
		if !used[name] {
			bad("volume %q is mounted by no container", name)
		}
	}
	for _, t := range p.Tolerations {
		switch t.Operator {
		case corev1.TolerationOpExists:
			if t.Value != "" {
				bad("toleration %q: Exists with a value", t.Key)
			}
		case corev1.TolerationOpEqual:
		default:
			bad("toleration %q: operator %q", t.Key, t.Operator)
		}
		switch t.Effect {
		case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			bad("toleration %q: effect %q", t.Key, t.Effect)
		}
		for _, msg := range validation.IsQualifiedName(t.Key) {
			bad("toleration key %q: %s", t.Key, msg)
		}
	}
	errs = append(errs, list(metavalidation.ValidateLabels(p.NodeSelector, field.NewPath(where, "nodeSelector")))...)
	if a := p.Affinity; a != nil && a.PodAntiAffinity != nil {
		terms := a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			if w.Weight < 1 || w.Weight > 100 {
				bad("anti-affinity weight %d not in 1..100", w.Weight)
			}
			terms = append(terms, w.PodAffinityTerm)
		}
		for _, term := range terms {
			if term.TopologyKey == "" {
				bad("anti-affinity term without topologyKey")
			}
			errs = append(errs, list(metavalidation.ValidateLabelSelector(term.LabelSelector,
				metavalidation.LabelSelectorValidationOptions{}, field.NewPath(where, "affinity")))...)
			sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
			if err != nil {
				bad("anti-affinity selector: %v", err)
			} else if !sel.Matches(labels.Set(t.Labels)) {
				bad("anti-affinity selector %s does not match the pods' own labels", sel)
			}
		}
	}
	for _, s := range p.ImagePullSecrets {
		for _, msg := range validation.IsDNS1123Subdomain(s.Name) {
			bad("imagePullSecret %q: %s", s.Name, msg)
		}
	}
	return errs
}

func varRefs(s string) []string {
	var out []string
	for {
		i := strings.Index(s, "$(")
		if i < 0 {
			return out
		}
		j := strings.Index(s[i:], ")")
		if j < 0 {
			return out
		}
		out = append(out, s[i+2:i+j])
		s = s[i+j+1:]
	}
}

func secretItem(c corev1.Container, volumes map[string]*corev1.Volume, file string) bool {
	for _, m := range c.VolumeMounts {
		if m.MountPath != "/token" {
			continue
		}
		v := volumes[m.Name]
		if v == nil || v.Secret == nil {
			return false
		}
		for _, it := range v.Secret.Items {
			if it.Path == file {
				return true
			}
		}
	}
	return false
}

func checkResources(where string, c corev1.Container) []string {
	var errs []string
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, hasReq := c.Resources.Requests[name]
		lim, hasLim := c.Resources.Limits[name]
		if !hasReq {
			errs = append(errs, fmt.Sprintf("%s: container %q: no %s request", where, c.Name, name))
		}
		if req.Sign() < 0 || lim.Sign() < 0 {
			errs = append(errs, fmt.Sprintf("%s: container %q: negative %s", where, c.Name, name))
		}
		if hasReq && hasLim && req.Cmp(lim) > 0 {
			errs = append(errs, fmt.Sprintf("%s: container %q: %s request %s above its limit %s", where, c.Name, name, req.String(), lim.String()))
		}
	}
	if _, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok {
		errs = append(errs, fmt.Sprintf("%s: container %q: no memory limit", where, c.Name))
	}
	return errs
}

// mountBundle writes the keys of every ConfigMap a projected volume of a Job lists into dir.
func mountBundle(o *objects, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, j := range o.jobs {
		for _, v := range j.Spec.Template.Spec.Volumes {
			if v.Projected == nil {
				continue
			}
			for _, src := range v.Projected.Sources {
				cm := o.configMaps[src.ConfigMap.Name]
				for k, text := range cm.Data {
					if err := os.WriteFile(dir+"/"+k, []byte(text), 0o644); err != nil {
						return err
					}
				}
				for k, b := range cm.BinaryData {
					if err := os.WriteFile(dir+"/"+k, b, 0o644); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}
