package helmtest

import "strings"

// Hostile charts: chart folders (file maps for testtree) whose templates
// run away, each in its own way, in templates/<the chart's name>.yaml. A
// render budget must stop each.

// hostileChart is a chart named name whose one template is tpl, with
// values.yaml values.
func hostileChart(name, tpl, values string) map[string]string {
	return map[string]string{
		"Chart.yaml":                  "apiVersion: v2\nname: " + name + "\nversion: 0.1.0\n",
		"values.yaml":                 values,
		"templates/_helpers.tpl":      `{{- define "` + name + `.name" -}}` + name + `{{- end -}}` + "\n",
		"templates/config.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"" + name + ".name\" . }}\ndata: {a: b}\n",
		"templates/" + name + ".yaml": tpl,
	}
}

// LoopChart loops 10^12 times doing nothing: no output, no function
// call, only time.
func LoopChart() map[string]string {
	return hostileChart("loop", "{{- range 1000000000000 }}{{ end }}\n", "")
}

// AmplifyChart is 400 bytes of template that render 320 MB: a 32-byte
// string written ten million times.
func AmplifyChart() map[string]string {
	return hostileChart("amplify", `apiVersion: v1
kind: ConfigMap
metadata:
  name: amplify
data:
  big: "{{ range 10000000 }}{{ $.Values.word }}{{ end }}"
`, "word: "+strings.Repeat("x", 32)+"\n")
}

// ForkChart includes itself twice at each of 40 levels: 2^40 includes,
// each level well under Helm's bound on nested includes of one name.
func ForkChart() map[string]string {
	return hostileChart("fork", `{{- define "fork.twice" -}}
{{- if lt (len .) 40 -}}
{{ include "fork.twice" (append . 1) }}{{ include "fork.twice" (append . 1) }}
{{- end -}}
{{- end -}}
{{ include "fork.twice" (list) }}
`, "")
}

// TplChart renders a value with tpl that renders itself with tpl: a
// recursion no Helm bound stops.
func TplChart() map[string]string {
	return hostileChart("recurse", "{{ tpl .Values.again . }}\n", "again: '{{ tpl .Values.again . }}'\n")
}

// DoublingChart doubles a string 40 times: a terabyte from one line.
func DoublingChart() map[string]string {
	return hostileChart("double", "{{- $s := \"xxxxxxxxxxxxxxxx\" }}{{ range 40 }}{{ $s = print $s $s }}{{ end }}{{ $s }}\n", "")
}
