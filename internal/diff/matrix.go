package diff

import "encoding/json"

// Matrix is a plan as workflow matrices: Include lists the affected
// targets (usable as is by `strategy.matrix: ${{ fromJSON(...) }}`),
// Clusters groups them per cluster.
type Matrix struct {
	Include  []MatrixTarget  `json:"include"`
	Clusters []MatrixCluster `json:"clusters"`
}

// MatrixTarget is one affected target and why.
type MatrixTarget struct {
	Name    string `json:"target"`
	Cluster string `json:"cluster,omitempty"`
	Why     string `json:"why"`
}

// MatrixCluster is a cluster and its affected targets in dependency order,
// comma-separated as the apply step's targets input takes them, so one job
// applies a cluster's targets in one run.
type MatrixCluster struct {
	Cluster string `json:"cluster"`
	Targets string `json:"targets"`
}

// Matrix returns the plan's matrices. The per-cluster one holds the
// affected targets that still exist at head, clusters in the order their
// first target comes.
func (p *Plan) Matrix() Matrix {
	m := Matrix{Include: []MatrixTarget{}, Clusters: []MatrixCluster{}}
	at := map[string]int{}
	for _, a := range p.Affected {
		m.Include = append(m.Include, MatrixTarget{a.Name, a.Cluster, a.Why})
		if a.Removed() {
			continue // nothing of it to apply
		}
		i, ok := at[a.Cluster]
		if !ok {
			i = len(m.Clusters)
			at[a.Cluster] = i
			m.Clusters = append(m.Clusters, MatrixCluster{Cluster: a.Cluster})
		}
		if m.Clusters[i].Targets != "" {
			m.Clusters[i].Targets += ","
		}
		m.Clusters[i].Targets += a.Name
	}
	return m
}

// JSON is the matrix as one line of JSON.
func (m Matrix) JSON() string {
	b, _ := json.Marshal(m) // strings and slices only: cannot fail
	return string(b)
}

// ClustersJSON is the per-cluster matrix, {"include": [...]}.
func (m Matrix) ClustersJSON() string {
	b, _ := json.Marshal(struct {
		Include []MatrixCluster `json:"include"`
	}{m.Clusters})
	return string(b)
}

// TargetsJSON is the JSON list of the affected targets' names.
func (m Matrix) TargetsJSON() string {
	names := []string{}
	for _, t := range m.Include {
		names = append(names, t.Name)
	}
	b, _ := json.Marshal(names)
	return string(b)
}
