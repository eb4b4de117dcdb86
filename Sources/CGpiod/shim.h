#include <gpiod.h>
