#!/usr/bin/env node
import { runMain } from '../dist/index.js';

runMain();
