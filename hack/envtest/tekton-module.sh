# Sourced by gen-modules.sh and install.sh: which wrapper module builds a
# Tekton Pipelines version. The version pinned in versions.env (what CI runs)
# is built by hack/envtest/tekton; any other by hack/envtest/tekton-<version>,
# each with its own committed go.mod/go.sum (a newer Tekton needs newer
# Kubernetes libraries, so the two cannot share one module).

# tekton_module_name VERSION DEFAULT_VERSION: prints the directory name under hack/envtest.
tekton_module_name() {
  case "$1" in
    v[0-9]*.[0-9]*.[0-9]*) ;;
    *) printf 'envtest: TEKTON_VERSION must be a release like v1.15.1, not "%s"\n' "$1" >&2; return 1 ;;
  esac
  if [ "$1" = "$2" ]; then echo tekton; else echo "tekton-$1"; fi
}
