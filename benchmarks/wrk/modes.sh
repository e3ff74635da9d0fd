# The sample server's settings for each mode the wrk scripts measure; sourced by compare.sh and profile.sh so that both
# measure the same servers. APP_ENV is the caller's (Sample__Echo=false unless --echo).
#   headercache         HeaderCache on
#   headercache-before  the same, from another checkout's build (compare.sh --against)
#   kestrel             HeaderCache not registered at all: stock Kestrel, the baseline
#   kestrel-noreuse     the same with Kestrel's string reuse off
mode_env() { # mode -> environment assignments
  case "$1" in
    headercache|headercache-before) echo "Sample__KestrelOnly=false HeaderCache__Enabled=true Kestrel__DisableStringReuse=false $APP_ENV" ;;
    kestrel) echo "Sample__KestrelOnly=true Kestrel__DisableStringReuse=false $APP_ENV" ;;
    kestrel-noreuse) echo "Sample__KestrelOnly=true Kestrel__DisableStringReuse=true $APP_ENV" ;;
  esac
}
