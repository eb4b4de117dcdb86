// libmosquitto (MQTT client), for the Fleet module only.
#include <stdbool.h>
#include <mosquitto.h>
