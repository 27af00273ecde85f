// Package policycost measures what one ValidatingAdmissionPolicy costs the API server per judged request,
// with the API server's own code (k8s.io/apiserver's validating policy plugin, the version kube-apiserver is
// built from): a policy compiled as the plugin compiles it, then Validate on a Pod create as the plugin
// calls it for each matched request. The driver is bench/experiments/policy-cost.ts, which writes the cases
// file named by POLICY_COST_CASES.
package policycost

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"
)

// Case is one measured policy: the policy (a ValidatingAdmissionPolicy, JSON) and the parameter object
// handed to it (null: a policy without parameters), judging Pod (JSON) created in Namespace (JSON).
// ParamsAsContent hands the parameters over so that they are read in place instead of written to JSON
// and parsed back (contentParams): what the API server would cost if it did that.
type Case struct {
	Name            string          `json:"name"`
	Policy          json.RawMessage `json:"policy"`
	Params          json.RawMessage `json:"params"`
	ParamsAsContent bool            `json:"paramsAsContent"`
	Pod             json.RawMessage `json:"pod"`
	Namespace       json.RawMessage `json:"namespace"`
}

// contentParams is an AllowList whose conversion to a CEL value reads its content in place: the API server
// converts an object that has ToUnstructured with it (structured-merge-diff's UnstructuredConverter), and
// any other object that marshals itself to JSON by writing and parsing JSON, as it does an
// *unstructured.Unstructured, the type of a custom resource's parameters.
type contentParams struct{ *unstructured.Unstructured }

func (p contentParams) ToUnstructured() interface{} { return p.Object }

// compile builds the policy's validator as the plugin's compilePolicy does (no match conditions here).
func compile(policy *admissionregv1.ValidatingAdmissionPolicy) (validating.Validator, error) {
	hasParams := policy.Spec.ParamKind != nil
	declarations := cel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}
	messageDeclarations := cel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: false}
	compiler, err := cel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return nil, err
	}
	variables := make([]cel.NamedExpressionAccessor, len(policy.Spec.Variables))
	for i, v := range policy.Spec.Variables {
		variables[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	compiler.CompileAndStoreVariables(variables, declarations, environment.StoredExpressions)
	validations := make([]cel.ExpressionAccessor, len(policy.Spec.Validations))
	messages := make([]cel.ExpressionAccessor, len(policy.Spec.Validations))
	for i, v := range policy.Spec.Validations {
		validations[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	filter := compiler.CompileCondition(validations, declarations, environment.StoredExpressions)
	for _, e := range filter.CompilationErrors() {
		return nil, e
	}
	return validating.NewValidator(
		filter,
		nil,
		compiler.CompileCondition(nil, declarations, environment.StoredExpressions),
		compiler.CompileCondition(messages, messageDeclarations, environment.StoredExpressions),
		policy.Spec.FailurePolicy,
		nil,
	), nil
}

func benchmarkCase(b *testing.B, c Case) {
	var policy admissionregv1.ValidatingAdmissionPolicy
	var pod corev1.Pod
	var namespace corev1.Namespace
	for _, d := range []struct {
		raw  json.RawMessage
		into any
	}{{c.Policy, &policy}, {c.Pod, &pod}, {c.Namespace, &namespace}} {
		if err := yaml.Unmarshal(d.raw, d.into); err != nil {
			b.Fatalf("case %s: %v", c.Name, err)
		}
	}
	validator, err := compile(&policy)
	if err != nil {
		b.Fatalf("case %s: policy %s: %v", c.Name, policy.Name, err)
	}
	var params runtime.Object
	if len(c.Params) > 0 && string(c.Params) != "null" {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(c.Params); err != nil {
			b.Fatalf("case %s: params: %v", c.Name, err)
		}
		params = u
		if c.ParamsAsContent {
			params = contentParams{u}
		}
	}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	subject := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// A fresh copy per request, as each request decodes its own object (the CEL value is cached on it).
		object := pod.DeepCopy()
		attributes := admission.NewAttributesRecord(object, nil, gvk, namespace.Name, object.Name, gvr, "",
			admission.Create, &metav1.CreateOptions{}, false, subject)
		versioned := &admission.VersionedAttributes{Attributes: attributes, VersionedKind: gvk,
			VersionedObject: admission.NewLazyObject(object), VersionedOldObject: admission.NewLazyObject(nil)}
		result := validator.Validate(context.Background(), gvr, versioned, params, &namespace,
			celconfig.RuntimeCELCostBudget, nil)
		for _, d := range result.Decisions {
			if d.Action != validating.ActionAdmit {
				b.Fatalf("case %s: the pod is not admitted: %s", c.Name, d.Message)
			}
		}
	}
}

func BenchmarkPolicyCost(b *testing.B) {
	path := os.Getenv("POLICY_COST_CASES")
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatalf("POLICY_COST_CASES: %v", err)
	}
	var cases []Case
	if err := json.Unmarshal(data, &cases); err != nil {
		b.Fatalf("%s: %v", path, err)
	}
	for i, c := range cases {
		if strings.ContainsAny(c.Name, " /") {
			b.Fatalf("case %d: name %q has a space or a slash", i, c.Name)
		}
		b.Run(fmt.Sprintf("%02d-%s", i, c.Name), func(b *testing.B) { benchmarkCase(b, c) })
	}
}
