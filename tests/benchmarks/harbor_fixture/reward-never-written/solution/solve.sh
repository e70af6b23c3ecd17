#!/bin/bash
printf 'Hello, %s!\n' "$(cat /app/data/name.txt)" > /app/greeting.txt
