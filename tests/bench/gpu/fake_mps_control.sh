# A stand-in for nvidia-cuda-mps-control in the GPU harness's tests (sourced by a fake on PATH).
# -d: "daemonizes" as a sleeping process whose PID goes in the pipe directory's pid file, with a control file
# standing for its socket. Otherwise it reads one command from stdin, as the real control client does, and fails
# with the real message when no daemon is running. Clients are what the fake vllm registers under clients/.
pipe="${CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}"
pidfile="$pipe/nvidia-cuda-mps-control.pid"
alive() { [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }
if [[ ${1:-} == -d ]]; then
  [[ -n ${FAKE_MPS_REFUSE:-} ]] && { echo "An instance of this daemon is already running" >&2; exit 1; }
  mkdir -p "$pipe"
  sleep 600 </dev/null >/dev/null 2>&1 &
  echo $! >"$pidfile"
  touch "$pipe/control"
  exit 0
fi
alive || { echo "Cannot find MPS control daemon process"; exit 1; }
read -r command argument
case $command in
  get_server_list) if compgen -G "$pipe/clients/*" >/dev/null; then echo 4242; fi ;;
  get_client_list) [[ $argument == 4242 ]] && compgen -G "$pipe/clients/*" >/dev/null && ls "$pipe/clients" ;;
  quit) rm -f "$pipe/control"; kill "$(cat "$pidfile")" ;;
  *) echo "unknown command $command" ;;
esac
exit 0
