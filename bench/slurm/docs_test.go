package slurm

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/shunt-net/shunt/bench"
)

// TestKubernetesExample keeps docs/cluster.md's Indexed Job in step with
// shunt: an Indexed Job of privileged pods, one per node, whose index + 1
// is the shard of as many shards as completions, written where a Slurm
// task of the same split writes it, and a merge of exactly those shards.
func TestKubernetesExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cluster.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/cluster.md has no yaml block")
	}
	type container struct {
		SecurityContext struct{ Privileged bool } `yaml:"securityContext"`
		Env             []struct {
			Name      string
			ValueFrom struct {
				FieldRef struct {
					FieldPath string `yaml:"fieldPath"`
				} `yaml:"fieldRef"`
			} `yaml:"valueFrom"`
		}
		Args []string
	}
	var job struct {
		Kind     string
		Metadata struct{ Name string }
		Spec     struct {
			CompletionMode string `yaml:"completionMode"`
			Completions    int
			Template       struct {
				Spec struct {
					Affinity struct {
						PodAntiAffinity struct {
							Required []struct {
								TopologyKey   string `yaml:"topologyKey"`
								LabelSelector struct {
									MatchLabels map[string]string `yaml:"matchLabels"`
								} `yaml:"labelSelector"`
							} `yaml:"requiredDuringSchedulingIgnoredDuringExecution"`
						} `yaml:"podAntiAffinity"`
					}
					Containers []container
				}
			}
		}
	}
	if err := yaml.Unmarshal(m[1], &job); err != nil {
		t.Fatalf("the Indexed Job does not parse: %v", err)
	}
	n := job.Spec.Completions
	if job.Kind != "Job" || job.Spec.CompletionMode != "Indexed" || n < 2 || len(job.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("not an Indexed Job of one container and several completions: %+v", job)
	}
	anti := job.Spec.Template.Spec.Affinity.PodAntiAffinity.Required
	if len(anti) != 1 || anti[0].TopologyKey != "kubernetes.io/hostname" || anti[0].LabelSelector.MatchLabels["job-name"] != job.Metadata.Name {
		t.Errorf("pods are not kept one per node: %+v", anti)
	}
	c := job.Spec.Template.Spec.Containers[0]
	if !c.SecurityContext.Privileged {
		t.Error("pods are not privileged (namespaces, TUN)")
	}
	nodeFromK8s := false
	for _, e := range c.Env {
		nodeFromK8s = nodeFromK8s || (e.Name == "SHUNT_NODE" && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName")
	}
	if !nodeFromK8s {
		t.Error("SHUNT_NODE is not the node's name: records would name pods")
	}
	args := strings.Join(c.Args, " ")
	cmd := regexp.MustCompile(`i=\$\(\(JOB_COMPLETION_INDEX \+ 1\)\);\s+exec shunt bench (\S+) --reps (\d+) --shard "\$i/(\d+)"\s+--out "(\S+)"`).FindStringSubmatch(args)
	if cmd == nil {
		t.Fatalf("args %q: want i=$((JOB_COMPLETION_INDEX + 1)); exec shunt bench NAME --reps R --shard \"$i/N\" --out \"DIR\"", args)
	}
	if _, _, err := bench.Load(cmd[1]); err != nil {
		t.Error(err)
	}
	if shards, _ := strconv.Atoi(cmd[3]); shards != n {
		t.Errorf("--shard $i/%d with %d completions", shards, n)
	}
	root := strings.TrimSuffix(cmd[4], "/shards/$i-of-"+strconv.Itoa(n))
	slurmJob := &Job{Root: root, Shards: n}
	if got := strings.ReplaceAll(cmd[4], "$i", "1"); got != slurmJob.ShardDir(1) {
		t.Errorf("shard 1 writes %s, a Slurm task of the same split %s", got, slurmJob.ShardDir(1))
	}
	merge := "shunt bench merge " + root + " " + root + "/shards/*-of-" + strconv.Itoa(n)
	if !strings.Contains(string(doc), merge) {
		t.Errorf("docs/cluster.md does not merge with %q", merge)
	}
}
